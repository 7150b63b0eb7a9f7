import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { runCliProcess, startServer, type ServerProcess } from '../helpers/processes.ts';
import { until } from '../helpers/until.ts';

// Real processes on the embedded database: the `remit` CLI and the server of `npm start`. The first
// `init` and the refused second process run as processes; the other commands run in this process
// (runCli: the same command code, without a process start each).
let dataDir: string;
let server: ServerProcess | undefined;

beforeAll(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-proc-'));
});
afterAll(() => {
  server?.child.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function oneJsonObject(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

// Steps of one story on one data directory and one server process, in this order (also when the suite
// runs shuffled): init, more users, a refused second process, SIGTERM.
describe('remit CLI and server processes', { timeout: 120_000, shuffle: false }, () => {
  let orgUid: string;
  let adminKey: string;

  it('remit init --json prints exactly one JSON object with the organization, user and key', async () => {
    // On an empty DATA_DIR: the process creates and migrates the database first.
    const res = await runCliProcess(
      ['init', '--org', 'Acme', '--email', 'Ada@Acme.test', '--name', 'Ada Admin', '--json'],
      {
        DATA_DIR: dataDir,
      },
    );
    expect(res.code, res.stderr).toBe(0);
    const out = oneJsonObject(res.stdout);
    expect(Object.keys(out).sort()).toEqual(['api_key', 'organization_uid', 'user_uid']);
    expect(out.api_key).toMatch(/^rk_live_[0-9A-Za-z]{38}$/);
    orgUid = out.organization_uid as string;
    adminKey = out.api_key as string;
  });

  it('remit users create adds a member; an existing email gets a new membership, not a new user', async () => {
    const member = await runCli(
      ['users', 'create', '--org', orgUid, '--email', 'bo@acme.test', '--role', 'member', '--json'],
      {
        DATA_DIR: dataDir,
      },
    );
    expect(member.code, member.stderr).toBe(0);
    const m = oneJsonObject(member.stdout);
    expect(Object.keys(m).sort()).toEqual(['api_key', 'user_uid']);

    const other = oneJsonObject(
      (await runCli(['init', '--org', 'Other', '--email', 'x@other.test', '--json'], { DATA_DIR: dataDir }))
        .stdout,
    );
    const again = await runCli(
      ['users', 'create', '--org', other.organization_uid as string, '--email', 'BO@acme.test', '--json'],
      {
        DATA_DIR: dataDir,
      },
    );
    expect(again.code, again.stderr).toBe(0);
    expect(oneJsonObject(again.stdout).user_uid).toBe(m.user_uid);

    const bad = await runCli(['users', 'create', '--org', orgUid, '--email', 'bo@acme.test', '--json'], {
      DATA_DIR: dataDir,
    });
    expect(bad.code).not.toBe(0);
    expect(oneJsonObject(bad.stdout)).toHaveProperty('error');
  });

  it('remit migrate --json reports an up-to-date database', async () => {
    const res = await runCli(['migrate', '--json'], { DATA_DIR: dataDir });
    expect(res.code, res.stderr).toBe(0);
    expect(oneJsonObject(res.stdout)).toEqual({ engine: 'pglite', applied: [] });
  });

  it('a second process on the same DATA_DIR exits non-zero naming the holder, and touches nothing', async () => {
    server = await startServer({ DATA_DIR: dataDir });
    const before = fs.readFileSync(path.join(dataDir, 'remit.lock'), 'utf8');
    // A command that needs the data directory to itself (the ones the server can run for it go over
    // its admin socket: cli-beside-server.test.ts).
    const res = await runCliProcess(['seed', '--org', orgUid, '--invoices', '10', '--json'], {
      DATA_DIR: dataDir,
    });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(`pid ${server.child.pid}`);
    expect(res.stderr).toContain('remit server');
    expect(oneJsonObject(res.stdout)).toMatchObject({ error: { code: 'data_dir_locked' } });
    expect(fs.readFileSync(path.join(dataDir, 'remit.lock'), 'utf8')).toBe(before);
    const me = await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(me.status).toBe(200);
    const orgs = ((await me.json()) as { data: { memberships: { organization_name: string }[] } }).data
      .memberships;
    expect(orgs.map((o) => o.organization_name)).toEqual(['Acme']);
    const parties = await fetch(`${server.url}/api/parties?organization_uid=${orgUid}`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(((await parties.json()) as { data: { items: unknown[] } }).data.items).toEqual([]);
  });

  it('SIGTERM stops accepting, finishes the in-flight request, then exits 0 and releases the lock', async () => {
    const s = server!;
    const body = JSON.stringify({ name: 'in flight' });
    // A request whose body is still arriving when the signal lands. With `Expect: 100-continue` the
    // server answers "100 Continue" as it takes the request up: then it is in flight, no guessing.
    const socket = net.connect(s.port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    let response = '';
    socket.on('data', (d: Buffer) => (response += d.toString()));
    socket.write(
      `POST /api/api-keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${adminKey}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n` +
        body.slice(0, 5),
    );
    await until(
      async () => response.startsWith('HTTP/1.1 100 Continue\r\n\r\n'),
      'the request to be taken up',
    );
    s.child.kill('SIGTERM');
    // New connections are refused while the in-flight request is finishing (its body is still ours).
    await until(
      () =>
        fetch(`${s.url}/healthz`).then(
          () => false,
          () => true,
        ),
      'the server to stop accepting connections',
    );
    socket.write(body.slice(5));
    const code = await s.exited;
    expect(response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200/);
    expect(response).toContain('"name":"in flight"');
    expect(code).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'remit.lock'))).toBe(false);
    server = undefined;
  });
});
