import { GetSecretValueCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { GetParameterCommand, type SSMClient } from "@aws-sdk/client-ssm";

export interface SecretClients {
  ssm: () => SSMClient;
  secretsManager: () => SecretsManagerClient;
}

const SECRETS_MANAGER_ARN = /^arn:[^:]+:secretsmanager:/;
const SECRETS_MANAGER_NAME = "secretsmanager:";

/**
 * Resolves `{ ENV_VAR: reference }` to `{ ENV_VAR: value }` at task start. A reference is a
 * Secrets Manager ARN, `secretsmanager:<name>`, or else an SSM parameter name/ARN (SecureString is
 * decrypted). Names are read in the task's own region (the clients' region), so a secret created
 * under the same name in every region works everywhere. Errors name the
 * variable and the reference, never a value.
 */
export async function resolveSecrets(refs: Record<string, string>, clients: SecretClients): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const [name, ref] of Object.entries(refs)) {
    try {
      values[name] = SECRETS_MANAGER_ARN.test(ref)
        ? await fromSecretsManager(ref, clients)
        : ref.startsWith(SECRETS_MANAGER_NAME)
          ? await fromSecretsManager(ref.slice(SECRETS_MANAGER_NAME.length), clients)
          : await fromParameterStore(ref, clients);
    } catch (err) {
      const e = err as Error;
      throw new Error(`secret ${name} (${ref}) could not be read: ${e.name}: ${e.message}`);
    }
  }
  return values;
}

async function fromSecretsManager(secretId: string, clients: SecretClients): Promise<string> {
  const out = await clients.secretsManager().send(new GetSecretValueCommand({ SecretId: secretId }));
  if (out.SecretString === undefined) throw new Error("the secret has no string value (binary secrets are not supported)");
  return out.SecretString;
}

async function fromParameterStore(name: string, clients: SecretClients): Promise<string> {
  const out = await clients.ssm().send(new GetParameterCommand({ Name: name, WithDecryption: true }));
  const value = out.Parameter?.Value;
  if (value === undefined) throw new Error("the parameter has no value");
  return value;
}
