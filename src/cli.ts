import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.ts';
import {
  AdminSocketError,
  AdminSocketUnavailableError,
  sendAdminCommand,
  type CommandOutput,
} from './platform/admin-socket.ts';
import type { Database } from './platform/db/client.ts';
import { DataDirLockedError } from './platform/db/lock.ts';
import { asService } from './platform/db/session-role.ts';
import { AppError } from './platform/http/errors.ts';
import { openMigratedDatabase } from './platform/runtime.ts';
import { addEmbeddedKey, loadKeyring } from './platform/secrets/keyring.ts';
import { generateSecretKey, keyIdOf, SecretKeyError } from './platform/secrets/secret-box.ts';
import { resealStoredSecrets } from './secrets.ts';
import { revokeApiKeyAsOperator, type ApiKeyView } from './modules/api-keys/api-keys.service.ts';
import {
  addUserToOrganization,
  createMemberKey,
  initOrganization,
  listKeysOfMember,
} from './modules/tenancy/tenancy.service.ts';
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
  keys create --email EMAIL [--org ORG_UID] [--name KEY_NAME] [--scopes a,b] [--expires-in-days N]
      A new API key for an existing member (default organization: theirs); shown once.
  keys list --email EMAIL [--org ORG_UID]
      The member's keys (never the keys themselves).
  keys revoke KEY_UID
      Revoke a key: it is refused from the next request on.
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
Configuration comes from the environment (DATABASE_URL, DATA_DIR, …; see docs/configuration.md).
Beside a server that owns an embedded DATA_DIR, init, users, keys, migrate and metrics run in that
server through DATA_DIR/admin.sock; the others need it stopped (docs/cli.md).`;

class UsageError extends Error {}

type Env = Record<string, string | undefined>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Output {
  json: boolean;
  result(value: Record<string, unknown>, human: string): void;
}

function keyStatus(key: ApiKeyView): 'active' | 'revoked' | 'expired' {
  if (key.revoked_at) return 'revoked';
  if (key.expires_at && key.expires_at.getTime() <= Date.now()) return 'expired';
  return 'active';
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

/**
 * Commands that run inside the server, over its admin socket, while it owns an embedded DATA_DIR
 * (docs/cli.md#beside-a-running-server): short writes and reads through the services, which the
 * server's open database serves like any request.
 */
const SERVED_BESIDE_SERVER: ReadonlySet<string> = new Set([
  'init',
  'users create',
  'keys create',
  'keys list',
  'keys revoke',
  'migrate',
  'metrics presets',
  'metrics compute',
]);

/** Why the other commands need the server stopped, added to the lock's message. */
const NEEDS_SERVER_STOPPED: Readonly<Record<string, string>> = {
  seed:
    '`remit seed` needs the server stopped: it turns off the statement timeout of the database ' +
    "session it runs in (with the embedded database, the server's only one) and may drop indexes for " +
    'a bulk load.',
  'secrets rotate':
    '`remit secrets rotate` needs the server stopped: the server reads its keys only when it starts.',
};

/** A command sent over the admin socket that the server does not run there. */
class NotServedError extends Error {
  constructor(command: string) {
    super(
      `\`remit ${command}\` does not run in the server over its admin socket. ` +
        (NEEDS_SERVER_STOPPED[command] ?? 'Stop the server first.'),
    );
  }
}

type Opened = { database: Database; appliedMigrations: string[] };

/** Where a command gets its configuration and database: its own process, or the server it runs in. */
interface CommandHost {
  config(): Config;
  withDatabase<T>(command: string, fn: (opened: Opened) => Promise<T>): Promise<T>;
  admits(command: string): boolean;
}

/** The `remit` process: its environment, and the database opened (lock, migrations) per command. */
function processHost(env: Env): CommandHost {
  let config: Config | undefined;
  const host: CommandHost = {
    config: () => (config ??= loadConfig(env)),
    async withDatabase(command, fn) {
      const opened = await openMigratedDatabase(host.config(), command);
      try {
        return await fn(opened);
      } finally {
        await opened.close();
      }
    },
    admits: () => true,
  };
  return host;
}

/** The server's own configuration and open database, already migrated at its start. */
function serverHost(server: { config: Config; database: Database }): CommandHost {
  return {
    config: () => server.config,
    withDatabase: (_command, fn) => fn({ database: server.database, appliedMigrations: [] }),
    admits: (command) => SERVED_BESIDE_SERVER.has(command),
  };
}

const COMMANDS_WITH_SUBCOMMANDS = new Set(['users', 'keys', 'metrics', 'secrets']);

async function run(argv: string[], out: Output, host: CommandHost, ran: { command?: string }): Promise<void> {
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
      scopes: { type: 'string' },
      'expires-in-days': { type: 'string' },
    },
  });
  const [command, sub] = positionals;
  if (!command && !values.help) throw new UsageError('No command given');
  if (values.help) {
    out.result({ usage: USAGE }, USAGE);
    return;
  }
  const name = COMMANDS_WITH_SUBCOMMANDS.has(command!) ? [command, sub].filter(Boolean).join(' ') : command!;
  ran.command = name;
  if (!host.admits(name)) throw new NotServedError(name);
  const config = host.config();
  const pepper = config.apiKeyPepper;
  const withDatabase = host.withDatabase;

  if (command === 'init') {
    const org = required(values, 'org');
    const email = required(values, 'email');
    const result = await withDatabase('remit init', async ({ database }) => {
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
    const result = await withDatabase('remit users create', ({ database }) =>
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
  if (command === 'keys' && sub === 'create') {
    const email = required(values, 'email');
    const org = values.org;
    if (org !== undefined && !UUID.test(org))
      throw new UsageError('--org must be an organization uid (a UUID)');
    let scopes: string[] | undefined;
    if (values.scopes !== undefined) {
      scopes = values.scopes
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (scopes.length === 0)
        throw new UsageError('--scopes must name at least one scope (leave it out for full access)');
    }
    let expiresInDays: number | undefined;
    if (values['expires-in-days'] !== undefined) {
      expiresInDays = wholeNumber(values['expires-in-days'], 'expires-in-days', 0);
      if (expiresInDays < 1 || expiresInDays > 36_500)
        throw new UsageError('--expires-in-days must be between 1 and 36500');
    }
    const keyName = values.name?.trim() || 'CLI key';
    const key = await withDatabase('remit keys create', ({ database }) =>
      createMemberKey(database.db, pepper, {
        email,
        organizationUid: org,
        name: keyName,
        scopes,
        expiresInDays,
      }),
    );
    const result = {
      uid: key.uid,
      name: key.name,
      user_uid: key.user_uid,
      organization_uid: key.organization_uid,
      scopes: key.scopes,
      expires_at: key.expires_at,
      api_key: key.key!,
    };
    out.result(
      result,
      `API key      ${result.api_key}\nKey uid      ${result.uid} ("${result.name}", ` +
        `${result.scopes.length > 0 ? result.scopes.join(', ') : 'full access'}` +
        `${result.expires_at ? `, expires ${result.expires_at.toISOString()}` : ''})\n` +
        `User         ${result.user_uid}\nOrganization ${result.organization_uid}\n\n` +
        'Keep the key: it is shown only once.',
    );
    return;
  }
  if (command === 'keys' && sub === 'list') {
    const email = required(values, 'email');
    const org = values.org;
    if (org !== undefined && !UUID.test(org))
      throw new UsageError('--org must be an organization uid (a UUID)');
    const result = await withDatabase('remit keys list', ({ database }) =>
      listKeysOfMember(database.db, { email, organizationUid: org }),
    );
    const keys = result.keys.map((k) => ({
      uid: k.uid,
      name: k.name,
      key_snippet: k.key_snippet,
      organization_uid: k.organization_uid,
      scopes: k.scopes,
      status: keyStatus(k),
      last_used_at: k.last_used_at,
      expires_at: k.expires_at,
      revoked_at: k.revoked_at,
      created_at: k.created_at,
    }));
    out.result(
      { user_uid: result.user_uid, keys },
      keys.length === 0
        ? 'No keys.'
        : keys
            .map(
              (k) =>
                `${k.uid}  ${k.key_snippet}  ${k.status.padEnd(7)}  org ${k.organization_uid}  ` +
                `${k.scopes.length > 0 ? k.scopes.join(',') : 'full access'}  "${k.name}"`,
            )
            .join('\n'),
    );
    return;
  }
  if (command === 'keys' && sub === 'revoke') {
    const uid = positionals[2];
    if (!uid || positionals.length > 3) throw new UsageError('keys revoke takes one key uid');
    if (!UUID.test(uid)) throw new UsageError('The key uid must be a UUID');
    const key = await withDatabase('remit keys revoke', ({ database }) =>
      revokeApiKeyAsOperator(database.db, uid),
    );
    const result = {
      uid: key.uid,
      name: key.name,
      user_uid: key.user_uid,
      organization_uid: key.organization_uid,
      revoked_at: key.revoked_at,
    };
    out.result(result, `Revoked key ${result.uid} ("${result.name}") at ${result.revoked_at?.toISOString()}`);
    return;
  }
  if (command === 'migrate') {
    const result = await withDatabase('remit migrate', async ({ appliedMigrations, database }) => ({
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
    const result = await withDatabase('remit seed', ({ database }) =>
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
      const result = await withDatabase('remit metrics presets', ({ database }) =>
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
    const result = await withDatabase('remit metrics compute', ({ database }) =>
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
    await runWorker(config, {
      // Passed in, not imported by the worker: the commands' code imports the worker (above).
      adminCommands: (database) => (args, io) => runServedCommand(args, io, { config, database }),
    });
    return;
  }
  if (command === 'secrets' && sub === 'generate-key') {
    const key = generateSecretKey();
    out.result({ key, key_id: keyIdOf(Buffer.from(key, 'base64')) }, key);
    return;
  }
  if (command === 'secrets' && sub === 'rotate') {
    const result = await withDatabase('remit secrets rotate', async ({ database }) => {
      const box =
        config.secretKey || config.databaseUrl
          ? (await loadKeyring(config)).box
          : await addEmbeddedKey(config);
      return { key_id: box.currentKeyId, ...(await resealStoredSecrets(database.db, box)) };
    });
    out.result(
      result,
      `Sealed under key ${result.key_id}: ${result.billing_secrets} billing secrets, ${result.smtp_urls} SMTP URLs, ${result.totp_secrets} TOTP secrets, ${result.webhook_secrets} webhook secrets`,
    );
    return;
  }
  throw new UsageError(`Unknown command: ${[command, sub].filter(Boolean).join(' ')}`);
}

/** Where one run of the CLI reads its configuration and writes its output: the process, or a test. */
export interface CliIo extends CommandOutput {
  env: Env;
}

/**
 * Runs one command on `host` and returns its exit code (0, 1 failed, 2 usage); `onLocked` may run it
 * elsewhere instead when the data directory is held by another process.
 */
async function execute(
  argv: string[],
  io: CommandOutput,
  host: CommandHost,
  ran: { command?: string },
  onLocked?: (error: DataDirLockedError, command: string) => Promise<number | Error>,
): Promise<number> {
  const json = argv.includes('--json');
  const out: Output = {
    json,
    result(value, human) {
      io.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
    },
  };
  try {
    await run(argv, out, host, ran);
    return 0;
  } catch (caught: unknown) {
    let error = caught;
    if (onLocked && error instanceof DataDirLockedError && ran.command) {
      const outcome = await onLocked(error, ran.command);
      if (typeof outcome === 'number') return outcome;
      error = outcome;
    }
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      error = new UsageError((error as Error).message);
    }
    const known =
      error instanceof UsageError ||
      error instanceof DataDirLockedError ||
      error instanceof NotServedError ||
      error instanceof AdminSocketError ||
      error instanceof ConfigError ||
      error instanceof AppError ||
      error instanceof SecretKeyError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    const message = error instanceof Error ? error.message : String(error);
    const code =
      error instanceof AppError
        ? error.code
        : error instanceof DataDirLockedError || error instanceof NotServedError
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

/**
 * A data directory held by another process: a server or `remit worker` that serves its admin socket
 * runs the command itself, and its output and exit code are this run's. Otherwise the lock's error
 * stands, saying why the socket could not be used or why the command needs the server stopped.
 */
async function besideServer(
  argv: string[],
  io: CommandOutput,
  locked: DataDirLockedError,
  command: string,
): Promise<number | Error> {
  if (!SERVED_BESIDE_SERVER.has(command)) {
    const why = NEEDS_SERVER_STOPPED[command];
    if (why) locked.message += ` ${why}`;
    return locked;
  }
  try {
    return await sendAdminCommand(path.dirname(locked.lockPath), argv, io);
  } catch (error) {
    if (!(error instanceof AdminSocketUnavailableError)) return error as Error;
    locked.message += ` (Its admin socket cannot be used: ${error.message}.)`;
    return locked;
  }
}

/**
 * Runs one `remit` command and returns its exit code (0, 1 failed, 2 usage) instead of exiting:
 * `src/cli-main.ts` gives it the process, and tests run commands in-process through it.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  return execute(argv, io, processHost(io.env), {}, (locked, command) =>
    besideServer(argv, io, locked, command),
  );
}

/**
 * Runs a command that came over the admin socket, in the server that owns the database: the same
 * parsing, command code, output and exit codes as `runCli`, with the server's configuration and its
 * open database. Only the commands of SERVED_BESIDE_SERVER run; any other is refused.
 */
export async function runServedCommand(
  argv: string[],
  io: CommandOutput,
  server: { config: Config; database: Database },
): Promise<{ exitCode: number; command: string }> {
  const ran: { command?: string } = {};
  // As the login role, like a `remit` process: an operator's command is confined to no tenant.
  const exitCode = await asService(() => execute(argv, io, serverHost(server), ran));
  return { exitCode, command: ran.command ?? '' };
}
