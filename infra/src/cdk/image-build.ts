/**
 * How `cdk deploy` builds the image's layers: zstd-compressed, through the Docker asset's build
 * outputs (README, "The image").
 *
 * zstd layers are smaller than gzip's and unpack several times faster, which is what a Fargate task
 * spends its pull on (Fargate takes zstd layers from platform version 1.4.0). The CDK CLI builds an
 * image asset with `docker build --tag <local> [--output=<each output>] .`, then `docker tag` and
 * `docker push`: the push sends the layers the engine stores. So the compression is chosen at build
 * time, with BuildKit's image exporter:
 * - Docker with the containerd image store (the default of new Docker Desktop and Docker Engine 29+
 *   installs) keeps the exporter's zstd blobs and pushes them as they are: zstd lands in ECR.
 * - Docker's classic image store accepts the same option but keeps layers uncompressed and
 *   compresses them with gzip when it pushes: the deploy works, with gzip layers, as before.
 * - `type=registry` would push zstd from any builder, but during the build and under a name of its
 *   own; the CLI's `docker push` of its local tag would then find no image. Not usable.
 * - Podman's build takes no `type=image` output (only local and tar), so with `CDK_DOCKER=podman`
 *   no output is passed; `podman push` compresses as containers.conf says (`compression_format = "zstd"`).
 */
import path from "node:path";

/** `zstd`: ask the builder for zstd layers; `gzip`: pass no build output (every builder's default). */
export type ImageCompression = "zstd" | "gzip";

/** BuildKit's image exporter: zstd at its default level, recompressing the base image's gzip layers too; zstd needs OCI media types. */
export const ZSTD_IMAGE_OUTPUT = "type=image,compression=zstd,force-compression=true,oci-mediatypes=true";

/**
 * The `outputs` of the image asset: zstd unless asked for gzip, or unless the builder is Podman and
 * zstd was not asked for explicitly. `dockerCommand` is the CLI's builder (`CDK_DOCKER`, default docker),
 * which the CDK CLI also gives the app it synthesizes.
 */
export function imageBuildOutputs(compression: ImageCompression | undefined, dockerCommand: string | undefined = process.env.CDK_DOCKER): string[] | undefined {
  const podman = dockerCommand !== undefined && /^podman(\.exe)?$/.test(path.basename(dockerCommand));
  const zstd = compression === "zstd" || (compression === undefined && !podman);
  return zstd ? [ZSTD_IMAGE_OUTPUT] : undefined;
}
