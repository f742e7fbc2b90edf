// Loaded with `node --require` (strictAwsNodeOptions): the spawned CLI or worker refuses what AWS
// would refuse, though its backend is moto.
import { installStrictAws } from "./strict-aws.js";

installStrictAws();
