import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { startServer, type ServerProcess } from '../helpers/processes.ts';
import { adminQuery, engine, testDatabaseUrl, withDatabaseName } from '../helpers/test-database.ts';

/**
 * Two API processes on one PostgreSQL database, each with its invoice view cache: an admin unassigns a
 * member on A while B holds the invoice's view. B must answer that member 404 from the very next
 * request, whether or not A's notification has reached it yet. The window in which it has not is made
 * to last: the notifying triggers of the two tables the change writes are off while it is made, so B
 * never hears it and still holds the view (a server deciding access from its held copy answers 200).
 */
describe.skipIf(engine !== 'postgres')('invoice view cache across two processes', () => {
  let name: string;
  let url: string;
  let dataDir: string;
  let client: pg.Client;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    name = `remit_view_cache_${crypto.randomBytes(5).toString('hex')}`;
    await adminQuery(`create database ${name}`);
    url = withDatabaseName(testDatabaseUrl!, name);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-view-cache-'));
  });
  afterAll(async () => {
    for (const s of servers) s.child.kill('SIGKILL');
    await client?.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
    await adminQuery(`drop database if exists ${name} with (force)`);
  });

  it("a member unassigned on A is refused on B at once, though B still holds the invoice's view", async () => {
    const env = { DATABASE_URL: url, DATA_DIR: dataDir, RUN_WORKERS: 'false', INVOICE_CACHE_TTL_S: '300' };
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], env);
    expect(init.code, init.stderr).toBe(0);
    const { api_key: admin, organization_uid: org } = JSON.parse(init.stdout) as {
      api_key: string;
      organization_uid: string;
    };
    const added = await runCli(
      ['users', 'create', '--org', org, '--email', 'member@acme.test', '--role', 'member', '--json'],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    const { api_key: member, user_uid: memberUid } = JSON.parse(added.stdout) as {
      api_key: string;
      user_uid: string;
    };
    client = new pg.Client({ connectionString: url });
    await client.connect();
    const [a, b] = await Promise.all([startServer(env), startServer(env)]);
    servers.push(a!, b!);

    const call = async (
      server: ServerProcess,
      key: string,
      method: string,
      route: string,
      body?: unknown,
    ) => {
      const res = await fetch(`${server.url}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, text: await res.text() };
    };
    const created = await call(a!, admin, 'POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: 'VC-1',
      currency: 'USD',
      assignee_user_uids: [memberUid],
    });
    expect(created.status, created.text).toBe(201);
    const uid = (JSON.parse(created.text) as { data: { uid: string } }).data.uid;

    // B holds the view: the member's second read answers the same bytes from memory.
    const first = await call(b!, member, 'GET', `/api/invoices/${uid}`);
    expect(first.status, first.text).toBe(200);
    expect((await call(b!, member, 'GET', `/api/invoices/${uid}`)).text).toBe(first.text);

    await client.query(`alter table invoices disable trigger user`);
    await client.query(`alter table invoice_assignees disable trigger user`);
    try {
      const unassigned = await call(a!, admin, 'PUT', `/api/invoices/${uid}`, { assignee_user_uids: [] });
      expect(unassigned.status, unassigned.text).toBe(200);
      const refused = await call(b!, member, 'GET', `/api/invoices/${uid}`);
      expect(refused.status, refused.text).toBe(404);
      // B still holds the view for those who may see it: the admin's read is the held one, unassigned
      // member and all (B never heard the change), while A, which made it, answers it.
      expect((await call(b!, admin, 'GET', `/api/invoices/${uid}`)).status).toBe(200);
      expect((await call(a!, member, 'GET', `/api/invoices/${uid}`)).status).toBe(404);
    } finally {
      await client.query(`alter table invoices enable trigger user`);
      await client.query(`alter table invoice_assignees enable trigger user`);
    }
    // Assigned again: B answers the member again, its held view or not.
    const back = await call(a!, admin, 'PUT', `/api/invoices/${uid}`, { assignee_user_uids: [memberUid] });
    expect(back.status, back.text).toBe(200);
    expect((await call(b!, member, 'GET', `/api/invoices/${uid}`)).status).toBe(200);
  });
});
