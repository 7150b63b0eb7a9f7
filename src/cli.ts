import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirLockedError } from './platform/db/lock.ts';
import { AppError } from './platform/http/errors.ts';
import { openMigratedDatabase } from './platform/runtime.ts';
import { addEmbeddedKey, loadKeyring } from './platform/secrets/keyring.ts';
import { generateSecretKey, keyIdOf, SecretKeyError } from './platform/secrets/secret-box.ts';
import { resealStoredSecrets } from './secrets.ts';
import { addUserToOrganization, initOrganization } from './modules/tenancy/tenancy.service.ts';
import { seedOrganization } from './modules/seed/seed.service.ts';
import {
  computePresetValues,
  installMetricPresets,
  utcDayOf,
} from './modules/metrics/metric-presets.service.ts';

const USAGE = `Usage: remit <command> [options]

Commands:
  init --org NAME --email EMAIL [--name FULL_NAME]
      Create an organization, its admin user and a full-access API key.
  users create --org ORG_UID --email EMAIL [--name FULL_NAME] [--role admin|member]
      Add a user (or a new membership for an existing email) with a full-access API key.
  migrate
      Apply database migrations.
  seed --org ORG_UID [--invoices N] [--parties N] [--ap-ratio 0..1] [--tasks N]
      Deterministic demo and benchmark data: parties, products, N invoices (default 1000), N work tasks.
  metrics presets --org ORG_UID
      Install the preset receivables metric definitions (DSO, overdue, aging, CEI); \`init\` does too.
  metrics compute --org ORG_UID [--date YYYY-MM-DD]
      Compute the organization's preset metric values as of a UTC day (default today) and store them.
  worker
      Work the background job queues (email sends, agent runs, knowledge processing, schedules) without
      serving HTTP, until SIGTERM or SIGINT. Run any number against one PostgreSQL (DATABASE_URL) beside
      servers started with RUN_WORKERS=false. Logs JSON lines like the server.
  secrets generate-key
      Print a new random key for SECRET_KEY (32 bytes, base64).
  secrets rotate
      Seal every stored credential under the current key. With SECRET_KEY: set the new key there and the
      old one in SECRET_KEY_PREVIOUS first. Embedded, without SECRET_KEY: a new key is added to
      DATA_DIR/secret.key (the old ones stay below it, so they still open what they sealed).

Every command takes --json: one JSON object on stdout and nothing else there.
Configuration comes from the environment (DATABASE_URL, DATA_DIR, …; see docs/configuration.md).`;

class UsageError extends Error {}

type Env = Record<string, string | undefined>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Output {
  json: boolean;
  result(value: Record<string, unknown>, human: string): void;
}

function wholeNumber(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^\d+$/.test(value))
    throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

async function withDatabase<T>(
  env: Env,
  command: string,
  fn: (db: Awaited<ReturnType<typeof openMigratedDatabase>>) => Promise<T>,
) {
  const config = loadConfig(env);
  const opened = await openMigratedDatabase(config, command);
  try {
    return { config, result: await fn(opened) };
  } finally {
    await opened.close();
  }
}

async function run(argv: string[], out: Output, env: Env): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      org: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
      invoices: { type: 'string' },
      parties: { type: 'string' },
      'ap-ratio': { type: 'string' },
      tasks: { type: 'string' },
      date: { type: 'string' },
    },
  });
  const [command, sub] = positionals;
  if (!command && !values.help) throw new UsageError('No command given');
  if (values.help) {
    out.result({ usage: USAGE }, USAGE);
    return;
  }
  const config = loadConfig(env);
  const pepper = config.apiKeyPepper;

  if (command === 'init') {
    const org = required(values, 'org');
    const email = required(values, 'email');
    const { result } = await withDatabase(env, 'remit init', async ({ database }) => {
      const created = await initOrganization(database.db, pepper, {
        organizationName: org,
        email,
        fullName: values.name,
      });
      await installMetricPresets(database.db, created.organization_uid);
      return created;
    });
    out.result(
      result,
      `Organization ${result.organization_uid}\nAdmin user   ${result.user_uid}\nAPI key      ${result.api_key}\n\nKeep the key: it is shown only once.`,
    );
    return;
  }
  if (command === 'users' && sub === 'create') {
    const org = required(values, 'org');
    if (!UUID.test(org)) throw new UsageError('--org must be an organization uid (a UUID)');
    const email = required(values, 'email');
    const role = values.role ?? 'member';
    if (role !== 'admin' && role !== 'member') throw new UsageError('--role must be admin or member');
    const { result } = await withDatabase(env, 'remit users create', ({ database }) =>
      addUserToOrganization(database.db, pepper, {
        organizationUid: org,
        email,
        fullName: values.name,
        role,
      }),
    );
    out.result(
      result,
      `User    ${result.user_uid}\nAPI key ${result.api_key}\n\nKeep the key: it is shown only once.`,
    );
    return;
  }
  if (command === 'migrate') {
    const { result } = await withDatabase(env, 'remit migrate', async ({ appliedMigrations, database }) => ({
      engine: database.kind,
      applied: appliedMigrations,
    }));
    out.result(
      result,
      result.applied.length > 0 ? `Applied: ${result.applied.join(', ')}` : 'The database is up to date.',
    );
    return;
  }
  if (command === 'seed') {
    const org = required(values, 'org');
    if (!UUID.test(org)) throw new UsageError('--org must be an organization uid (a UUID)');
    const invoices = wholeNumber(values.invoices, 'invoices', 1000);
    const parties = wholeNumber(
      values.parties,
      'parties',
      Math.min(2000, Math.max(20, Math.ceil(invoices / 100))),
    );
    const apRatio = values['ap-ratio'] === undefined ? 0.5 : Number(values['ap-ratio']);
    if (!(apRatio >= 0 && apRatio <= 1)) throw new UsageError('--ap-ratio must be between 0 and 1');
    const tasks = wholeNumber(values.tasks, 'tasks', 0);
    const { result } = await withDatabase(env, 'remit seed', ({ database }) =>
      seedOrganization(database.db, { organizationUid: org, invoices, parties, apRatio, tasks }),
    );
    out.result(
      result as unknown as Record<string, unknown>,
      `Seeded ${result.invoices} invoices (${result.payable} payable, ${result.receivable} receivable), ${result.parties} parties, ${result.products} products, ${result.tasks} work tasks in ${result.seconds} s`,
    );
    return;
  }
  if (command === 'metrics' && (sub === 'presets' || sub === 'compute')) {
    const org = required(values, 'org');
    if (!UUID.test(org)) throw new UsageError('--org must be an organization uid (a UUID)');
    if (sub === 'presets') {
      const { result } = await withDatabase(env, 'remit metrics presets', ({ database }) =>
        installMetricPresets(database.db, org),
      );
      out.result(
        result as unknown as Record<string, unknown>,
        `Installed ${result.installed.length} preset metrics (${result.already_installed.length} already there` +
          `${result.conflicts.length > 0 ? `; skipped, uid taken: ${result.conflicts.join(', ')}` : ''})`,
      );
      return;
    }
    const date = values.date ?? utcDayOf(new Date());
    const parsed = new Date(`${date}T00:00:00Z`);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(parsed.getTime()) || utcDayOf(parsed) !== date)
      throw new UsageError('--date must be a date, YYYY-MM-DD');
    const { result } = await withDatabase(env, 'remit metrics compute', ({ database }) =>
      computePresetValues(database.db, org, date),
    );
    out.result(
      result as unknown as Record<string, unknown>,
      `Wrote ${result.values_written} preset metric values for ${result.metric_date}` +
        `${result.skipped.length > 0 ? ` (${result.skipped.length} without a value)` : ''}`,
    );
    return;
  }
  if (command === 'worker' && !sub) {
    // Loaded here: the job handlers pull in every module, which no other command needs.
    const { runWorker } = await import('./runtime/worker.ts');
    await runWorker(config);
    return;
  }
  if (command === 'secrets' && sub === 'generate-key') {
    const key = generateSecretKey();
    out.result({ key, key_id: keyIdOf(Buffer.from(key, 'base64')) }, key);
    return;
  }
  if (command === 'secrets' && sub === 'rotate') {
    const { result } = await withDatabase(env, 'remit secrets rotate', async ({ database }) => {
      const box =
        config.secretKey || config.databaseUrl
          ? (await loadKeyring(config)).box
          : await addEmbeddedKey(config);
      return { key_id: box.currentKeyId, ...(await resealStoredSecrets(database.db, box)) };
    });
    out.result(
      result,
      `Sealed under key ${result.key_id}: ${result.billing_secrets} billing secrets, ${result.smtp_urls} SMTP URLs, ${result.totp_secrets} TOTP secrets`,
    );
    return;
  }
  throw new UsageError(`Unknown command: ${[command, sub].filter(Boolean).join(' ')}`);
}

/** Where one run of the CLI reads its configuration and writes its output: the process, or a test. */
export interface CliIo {
  env: Env;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/**
 * Runs one `remit` command and returns its exit code (0, 1 failed, 2 usage) instead of exiting:
 * `src/cli-main.ts` gives it the process, and tests run commands in-process through it.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const json = argv.includes('--json');
  const out: Output = {
    json,
    result(value, human) {
      io.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
    },
  };
  try {
    await run(argv, out, io.env);
    return 0;
  } catch (caught: unknown) {
    let error = caught;
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      error = new UsageError((error as Error).message);
    }
    const known =
      error instanceof UsageError ||
      error instanceof DataDirLockedError ||
      error instanceof ConfigError ||
      error instanceof AppError ||
      error instanceof SecretKeyError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    const message = error instanceof Error ? error.message : String(error);
    const code =
      error instanceof AppError
        ? error.code
        : error instanceof DataDirLockedError
          ? 'data_dir_locked'
          : error instanceof UsageError
            ? 'usage'
            : error instanceof ConfigError || error instanceof SecretKeyError
              ? 'config'
              : 'failed';
    // Unexpected failures keep their details (SQL, stack) on stderr only.
    const shown = code === 'failed' ? 'Unexpected failure; details on stderr' : message;
    if (json) io.stdout.write(`${JSON.stringify({ error: { code, message: shown } })}\n`);
    io.stderr.write(
      `remit: ${known ? message : error instanceof Error ? (error.stack ?? message) : message}\n`,
    );
    const cause = (error as { cause?: unknown }).cause;
    if (!known && cause)
      io.stderr.write(`caused by: ${cause instanceof Error ? cause.message : String(cause)}\n`);
    if (error instanceof UsageError) io.stderr.write(`\n${USAGE}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
}
