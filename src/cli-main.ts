import { runCli } from './cli.ts';

// The `remit` process (bin/remit.js runs this file compiled); the commands live in cli.ts, where tests
// run them in-process. Exits at once, as a one-shot command should, whatever handle is still open.
const code = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
process.exit(code);
