// `npm run --silent cli -- <command>`: the operator CLI (projects, keys, domains).
import { runCli } from '../cli/program';

runCli(process.argv).then((code) => process.exit(code));
