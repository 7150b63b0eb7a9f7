// The `remit` process (bin/remit.js runs this file compiled); the commands live in cli.ts, where tests
// run them in-process. Exits at once, as a one-shot command should, whatever handle is still open.
// `remit worker` traces its jobs as the server traces requests: the hooks must be in place before `pg`
// and `http` load, so the commands are imported only after them (docs/observability.md#traces).
if (process.argv[2] === 'worker') await import('./platform/observability/tracing-preload.ts');
const { runCli } = await import('./cli.ts');
const code = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
process.exit(code);
