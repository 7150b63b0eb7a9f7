import { runCli as runCliCommand } from '../../src/cli.ts';
import { remitEnv, type RunResult } from './processes.ts';

/**
 * Runs a `remit` command in this process (`runCli` of src/cli.ts: the same parsing, output and exit
 * codes as the process, without 1–2 s of process start per command). Its environment is `env` alone.
 */
export async function runCli(args: string[], env: Record<string, string>): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCliCommand(args, {
    env: remitEnv(env),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}
