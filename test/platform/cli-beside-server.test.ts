import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendAdminCommand } from '../../src/platform/admin-socket.ts';
import { runCli } from '../helpers/cli.ts';
import { runCliProcess, startServer, type ServerProcess } from '../helpers/processes.ts';
import { engine, processDatabase, type ProcessDatabase } from '../helpers/test-database.ts';
import type { RunResult } from '../helpers/processes.ts';

function oneJsonObject(res: RunResult): Record<string, unknown> {
  const lines = res.stdout.trim().split('\n');
  expect(lines, res.stderr).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

async function api(server: ServerProcess, key: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A command sent over the admin socket by hand, as a client other than the CLI could. */
async function overSocket(dataDir: string, argv: string[]): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const code = await sendAdminCommand(dataDir, argv, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}

/**
 * `remit` beside a running server on the embedded database (docs/cli.md#beside-a-running-server): the
 * server owns DATA_DIR and serves DATA_DIR/admin.sock; the CLI sends the commands that may run there
 * and prints what the server's run of them printed, with its exit code. Real processes where the
 * process is the point (the server; the CLI's first commands), the CLI in-process for the rest.
 */
describe.skipIf(engine !== 'pglite')(
  'the CLI beside a running server (embedded database)',
  {
    timeout: 120_000,
    // Steps of one story on one data directory: direct, beside the server, after kill -9, after SIGTERM.
    shuffle: false,
  },
  () => {
    let processDb: ProcessDatabase;
    let dataDir: string;
    let env: Record<string, string>;
    let socketPath: string;
    let server: ServerProcess | undefined;
    let orgUid: string;
    let adminKey: string;
    let directKey: string;

    beforeAll(async () => {
      processDb = await processDatabase('remit-beside-');
      dataDir = processDb.dataDir;
      env = processDb.env;
      socketPath = path.join(dataDir, 'admin.sock');
    });
    afterAll(async () => {
      server?.child.kill('SIGKILL');
      if (server) await server.exited;
      await processDb.drop();
    });

    it('with no server the commands open the database themselves', async () => {
      const init = await runCli(['init', '--org', 'Acme', '--email', 'ada@acme.test', '--json'], env);
      expect(init.code, init.stderr).toBe(0);
      const created = oneJsonObject(init) as { organization_uid: string; api_key: string };
      orgUid = created.organization_uid;
      adminKey = created.api_key;
      const key = await runCli(
        ['keys', 'create', '--email', 'ada@acme.test', '--name', 'Direct', '--json'],
        env,
      );
      expect(key.code, key.stderr).toBe(0);
      directKey = oneJsonObject(key).api_key as string;
      expect(fs.existsSync(socketPath)).toBe(false);
      expect(fs.existsSync(path.join(dataDir, 'remit.lock'))).toBe(false);
    });

    it('the server serves DATA_DIR/admin.sock, a socket only its user may open (0600)', async () => {
      server = await startServer(env);
      const stat = fs.lstatSync(socketPath);
      expect(stat.isSocket()).toBe(true);
      expect(stat.mode & 0o777).toBe(0o600);
      // The key made directly before the start works against the server.
      expect((await api(server, directKey, 'GET', '/api/me')).status).toBe(200);
    });

    it('remit users create, as a process, runs in the server; the key it prints works there', async () => {
      const res = await runCliProcess(
        ['users', 'create', '--org', orgUid, '--email', 'bo@acme.test', '--role', 'member', '--json'],
        env,
      );
      expect(res.code, res.stderr).toBe(0);
      expect(res.stderr).toBe('');
      const created = oneJsonObject(res);
      expect(Object.keys(created).sort()).toEqual(['api_key', 'user_uid']);
      const me = await api(server!, created.api_key as string, 'GET', '/api/me');
      expect(me.status).toBe(200);
      expect(me.body.data.memberships).toEqual([
        expect.objectContaining({ organization_uid: orgUid, role: 'member' }),
      ]);
    });

    it('remit keys create, as a process, prints a new scoped key for the member; the server honours its scopes', async () => {
      const res = await runCliProcess(
        [
          'keys',
          'create',
          '--email',
          'BO@acme.test',
          '--scopes',
          'invoices:read',
          '--name',
          'Reports',
          '--json',
        ],
        env,
      );
      expect(res.code, res.stderr).toBe(0);
      const key = oneJsonObject(res);
      expect(key).toMatchObject({
        name: 'Reports',
        organization_uid: orgUid,
        scopes: ['invoices:read'],
        expires_at: null,
        api_key: expect.stringMatching(/^rk_live_/),
      });
      expect(
        (await api(server!, key.api_key as string, 'GET', `/api/parties?organization_uid=${orgUid}`)).status,
      ).toBe(200);
      const write = await api(server!, key.api_key as string, 'POST', '/api/parties', {
        organization_uid: orgUid,
        name: 'Not allowed',
        role: 'client',
      });
      expect(write.status).toBe(403);
      expect(write.body.code).toBe('missing_scope');
    });

    it('remit metrics compute, as a process, runs in the server and stores the values it serves', async () => {
      const res = await runCliProcess(
        ['metrics', 'compute', '--org', orgUid, '--date', '2026-01-15', '--json'],
        env,
      );
      expect(res.code, res.stderr).toBe(0);
      const computed = oneJsonObject(res);
      expect(computed).toMatchObject({ organization_uid: orgUid, metric_date: '2026-01-15' });
      expect(computed.values_written).toBeGreaterThan(0);
      const series = await api(
        server!,
        adminKey,
        'GET',
        `/api/metrics/overdue_amount_cents/values?organization_uid=${orgUid}&from=2026-01-15&to=2026-01-15`,
      );
      expect(series.status).toBe(200);
      expect(series.body.data.items).toEqual([
        expect.objectContaining({ metric_date: '2026-01-15', value: 0 }),
      ]);
    });

    it("the server's output, failures and exit codes are the command's; usage errors stay local", async () => {
      const human = await runCli(['keys', 'list', '--email', 'bo@acme.test'], env);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(/active {3}org .* invoices:read {2}"Reports"\n/);

      const twice = await runCli(
        ['users', 'create', '--org', orgUid, '--email', 'bo@acme.test', '--json'],
        env,
      );
      expect(twice.code).toBe(1);
      expect(oneJsonObject(twice)).toEqual({
        error: { code: 'already_exists', message: 'bo@acme.test is already a member of this organization' },
      });
      expect(twice.stderr).toBe('remit: bo@acme.test is already a member of this organization\n');

      const aboveRole = await runCli(
        ['keys', 'create', '--email', 'bo@acme.test', '--scopes', 'agents:token_usage', '--json'],
        env,
      );
      expect(aboveRole.code).toBe(1);
      expect(oneJsonObject(aboveRole)).toEqual({
        error: { code: 'validation_failed', message: "A member's key cannot hold: agents:token_usage" },
      });

      const usage = await runCli(['keys', 'create', '--json'], env);
      expect(usage.code).toBe(2);
      expect(oneJsonObject(usage)).toEqual({ error: { code: 'usage', message: '--email is required' } });

      expect(oneJsonObject(await runCli(['migrate', '--json'], env))).toEqual({
        engine: 'pglite',
        applied: [],
      });
    });

    it('remit keys revoke runs in the server: the key is refused from the next request on', async () => {
      const list = oneJsonObject(await runCli(['keys', 'list', '--email', 'ada@acme.test', '--json'], env));
      const direct = (list.keys as { uid: string; name: string }[]).find((k) => k.name === 'Direct')!;
      const revoked = await runCli(['keys', 'revoke', direct.uid, '--json'], env);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(oneJsonObject(revoked)).toMatchObject({ uid: direct.uid, revoked_at: expect.any(String) });
      expect((await api(server!, directKey, 'GET', '/api/me')).status).toBe(401);
      expect((await api(server!, adminKey, 'GET', '/api/me')).status).toBe(200);
    });

    it('a command that needs the server stopped says so, and the server refuses it over the socket too', async () => {
      const seed = await runCli(['seed', '--org', orgUid, '--invoices', '10', '--json'], env);
      expect(seed.code).toBe(1);
      const { error } = oneJsonObject(seed) as { error: { code: string; message: string } };
      expect(error.code).toBe('data_dir_locked');
      expect(error.message).toContain(`pid ${server!.child.pid}`);
      expect(error.message).toContain('`remit seed` needs the server stopped');

      // A client other than the CLI, asking for what the CLI would never send.
      for (const argv of [
        ['seed', '--org', orgUid, '--json'],
        ['secrets', 'rotate', '--json'],
        ['worker', '--json'],
      ]) {
        const refused = await overSocket(dataDir, argv);
        expect(refused.code, argv.join(' ')).toBe(1);
        expect(oneJsonObject(refused)).toMatchObject({
          error: { code: 'data_dir_locked', message: expect.stringContaining('does not run in the server') },
        });
      }
      // Nothing was seeded.
      const parties = await api(server!, adminKey, 'GET', `/api/parties?organization_uid=${orgUid}`);
      expect(parties.body.data.items).toEqual([]);
    });

    it('after kill -9 the socket file stays; the CLI then works directly, and the next server replaces the socket', async () => {
      server!.child.kill('SIGKILL');
      await server!.exited;
      server = undefined;
      const stale = fs.lstatSync(socketPath);
      expect(stale.isSocket()).toBe(true);

      // The lock's holder is gone: the command takes the data directory itself.
      const direct = await runCli(['keys', 'list', '--email', 'bo@acme.test', '--json'], env);
      expect(direct.code, direct.stderr).toBe(0);
      expect((oneJsonObject(direct).keys as unknown[]).length).toBe(2);

      server = await startServer(env);
      const fresh = fs.lstatSync(socketPath);
      expect(fresh.isSocket()).toBe(true);
      expect(fresh.ctimeMs).toBeGreaterThan(stale.ctimeMs); // a new file (the inode number may be reused)
      expect(fresh.mode & 0o777).toBe(0o600);
      const res = await runCli(['keys', 'create', '--email', 'bo@acme.test', '--json'], env);
      expect(res.code, res.stderr).toBe(0);
      expect((await api(server, oneJsonObject(res).api_key as string, 'GET', '/api/me')).status).toBe(200);
    });

    it('SIGTERM removes the socket with the lock', async () => {
      server!.child.kill('SIGTERM');
      expect(await server!.exited).toBe(0);
      server = undefined;
      expect(fs.existsSync(socketPath)).toBe(false);
      expect(fs.existsSync(path.join(dataDir, 'remit.lock'))).toBe(false);
    });
  },
);

describe.skipIf(engine === 'pglite')('the CLI beside a running server (PostgreSQL)', () => {
  let processDb: ProcessDatabase;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    processDb = await processDatabase('remit-beside-pg-');
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    if (server) await server.exited;
    await processDb.drop();
  });

  it('serves no socket: the CLI connects to the database itself, as before', async () => {
    server = await startServer(processDb.env);
    expect(fs.existsSync(path.join(processDb.dataDir, 'admin.sock'))).toBe(false);
    const init = await runCli(['init', '--org', 'Acme', '--email', 'ada@acme.test', '--json'], processDb.env);
    expect(init.code, init.stderr).toBe(0);
    const key = await runCli(['keys', 'create', '--email', 'ada@acme.test', '--json'], processDb.env);
    expect(key.code, key.stderr).toBe(0);
    expect((await api(server, oneJsonObject(key).api_key as string, 'GET', '/api/me')).status).toBe(200);
  }, 120_000);
});
