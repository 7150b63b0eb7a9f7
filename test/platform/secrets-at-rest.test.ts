import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawQuery } from '../../src/platform/db/client.ts';
import {
  generateSecretKey,
  parseSecretKey,
  SecretBox,
  SecretKeyError,
} from '../../src/platform/secrets/secret-box.ts';
import { resealStoredSecrets } from '../../src/secrets.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakePartner } from '../helpers/fake-partner.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { runCli } from '../helpers/cli.ts';
import { startServer, type ServerProcess } from '../helpers/processes.ts';
import {
  adminQuery,
  engine,
  processDatabase,
  testDatabaseUrl,
  withDatabaseName,
  type ProcessDatabase,
} from '../helpers/test-database.ts';

const keyOf = () => parseSecretKey(generateSecretKey(), 'key');

describe('SecretBox', () => {
  const box = new SecretBox([keyOf()]);

  it('seals with a fresh IV each time and opens what it sealed, for the same purpose only', () => {
    const a = box.seal('hunter2', 'x:1');
    const b = box.seal('hunter2', 'x:1');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^enc:v1:[0-9a-f]{16}:[\w-]{16}:[\w-]+$/);
    expect(a).not.toContain('hunter2');
    expect(box.open(a, 'x:1')).toBe('hunter2');
    // Copied onto another row: refused, never opened as someone else's secret.
    expect(() => box.open(a, 'x:2')).toThrow(/altered or copied from elsewhere/);
  });

  it('a wrong key fails with an error naming the key, never a wrong plaintext', () => {
    const sealed = box.seal('s3cret', 'p');
    const other = new SecretBox([keyOf()]);
    expect(() => other.open(sealed, 'p')).toThrow(SecretKeyError);
    expect(() => other.open(sealed, 'p')).toThrow(
      new RegExp(`key ${box.currentKeyId}, which is not configured`),
    );
  });

  it('a tampered value fails authentication', () => {
    const sealed = box.seal('s3cret', 'p');
    const last = sealed.at(-2) === 'A' ? 'B' : 'A';
    const tampered = `${sealed.slice(0, -2)}${last}${sealed.at(-1)}`;
    expect(() => box.open(tampered, 'p')).toThrow(SecretKeyError);
    expect(() => box.open('plaintext', 'p')).toThrow(/not a sealed secret/);
  });

  it('after a rotation the old key still opens; isStale tells what to seal again', () => {
    const old = keyOf();
    const sealedOld = new SecretBox([old]).seal('v', 'p');
    const rotated = new SecretBox([keyOf(), old]);
    expect(rotated.open(sealedOld, 'p')).toBe('v');
    expect(rotated.isStale(sealedOld)).toBe(true);
    expect(rotated.isStale(rotated.seal('v', 'p'))).toBe(false);
    expect(rotated.isStale('plaintext')).toBe(true);
  });

  it('keys must be 32 bytes, base64 or hex', () => {
    expect(() => parseSecretKey('short', 'SECRET_KEY')).toThrow(/32 random bytes/);
    expect(parseSecretKey('ab'.repeat(32), 'k').key).toHaveLength(32);
  });
});

describe('credentials in the database', () => {
  let t: TestApp;
  let p: Principals;
  let partner: FakePartner;
  const billingSecret = `whsec_${crypto.randomBytes(16).toString('hex')}`;
  const smtpPassword = `pw-${crypto.randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    t = await createTestApp();
    p = await createPrincipals(t);
    partner = await FakePartner.start(billingSecret);
  });
  afterAll(async () => {
    await partner?.close();
    await t?.close();
  });

  /** Every row of every table, as text: what a logical dump of the database holds. */
  async function logicalDump(): Promise<string> {
    const tables = await rawQuery<{ name: string }>(
      t.db,
      `select quote_ident(table_schema) || '.' || quote_ident(table_name) as name
         from information_schema.tables
        where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
    );
    const parts: string[] = [];
    for (const { name } of tables) {
      const rows = await rawQuery<{ row: string }>(t.db, `select t::text as row from ${name} t`);
      parts.push(...rows.map((r) => r.row));
    }
    return parts.join('\n');
  }

  it('a billing secret and an SMTP password are stored sealed, and still work', async () => {
    const configured = await call(t.app, 'PUT', `/api/organization/${p.orgA.uid}/integrations/billing`, {
      key: p.orgA.admin.key,
      body: { type: 'http', url: partner.url(), secret: billingSecret },
    });
    expect(configured.status, configured.raw).toBe(201);
    const account = await call(t.app, 'POST', '/api/email/accounts', {
      key: p.orgA.admin.key,
      body: {
        email: 'ar@acme.test',
        display_name: 'AR',
        smtp_url: `smtps://ar%40acme.test:${smtpPassword}@smtp.acme.test:2465`,
      },
    });
    expect(account.status, account.raw).toBe(201);
    expect(account.body.data).toMatchObject({ smtp_host: 'smtp.acme.test', smtp_port: 2465 });

    const dump = await logicalDump();
    expect(dump).toContain('enc:v1:');
    expect(dump).not.toContain(billingSecret);
    expect(dump).not.toContain(smtpPassword);
    if (engine === 'pglite') {
      // The files themselves too (tables, indexes, write-ahead log).
      const files = Buffer.from(await (await t.database.pglite!.dumpDataDir('none')).arrayBuffer());
      expect(files.includes(Buffer.from(billingSecret))).toBe(false);
      expect(files.includes(Buffer.from(smtpPassword))).toBe(false);
    }

    // Opened when used: the partner verifies the signature made with the plaintext secret.
    const invoice = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgA.admin.key,
      body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: 'SEC-1', currency: 'USD' },
    });
    const updated = await call(t.app, 'PUT', `/api/invoices/${invoice.body.data.uid}`, {
      key: p.orgA.admin.key,
      body: { stamp_number: 'S' },
    });
    expect(updated.status, updated.raw).toBe(200);
    expect(partner.requests.at(-1)!.signatureValid).toBe(true);
  });

  it('plaintext left from before is sealed at start (resealStoredSecrets), and reads the same', async () => {
    const org = (await createPrincipals(t)).orgA;
    await rawQuery(
      t.db,
      `insert into billing_integrations (organization_uid, type, url, secret) values ($1, 'http', $2, 'legacy-plaintext-secret')`,
      [org.uid, partner.url()],
    );
    const counts = await resealStoredSecrets(t.db, t.deps.secrets);
    expect(counts.billing_secrets).toBeGreaterThanOrEqual(1);
    const [row] = await rawQuery<{ secret: string }>(
      t.db,
      `select secret from billing_integrations where organization_uid = $1`,
      [org.uid],
    );
    expect(row!.secret).toMatch(/^enc:v1:/);
    expect(t.deps.secrets.open(row!.secret, `billing_integrations.secret:${org.uid}`)).toBe(
      'legacy-plaintext-secret',
    );
    // Nothing stale is left: a second pass seals nothing.
    expect(await resealStoredSecrets(t.db, t.deps.secrets)).toEqual({
      billing_secrets: 0,
      smtp_urls: 0,
      totp_secrets: 0,
      webhook_secrets: 0,
    });
  });
});

/** The key's life on the embedded defaults, with real processes. */
describe.skipIf(engine !== 'pglite')('the embedded key file, rotation and a wrong key', () => {
  let processDb: ProcessDatabase;
  let dataDir: string;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    processDb = await processDatabase('remit-keys-');
    dataDir = processDb.dataDir;
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await processDb?.drop();
  });
  const stop = async () => {
    server!.child.kill('SIGTERM');
    await server!.exited;
    server = undefined;
  };

  it('generated on first start (0600, logged once), rotated by the CLI, and a wrong SECRET_KEY stops the start', async () => {
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], {
      DATA_DIR: dataDir,
    });
    expect(init.code, init.stderr).toBe(0);
    const apiKey = (JSON.parse(init.stdout) as { api_key: string }).api_key;
    const api = (method: string, url: string, body?: unknown) =>
      fetch(`${server!.url}${url}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });

    server = await startServer({ DATA_DIR: dataDir, ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
    const keyFile = path.join(dataDir, 'secret.key');
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(server.output()).toMatch(/generated the key that encrypts stored credentials/);
    const created = await api('POST', '/api/email/accounts', {
      email: 'ar@acme.test',
      display_name: 'AR',
      smtp_url: 'smtps://u:very-secret-pw@smtp.acme.test:2465',
    });
    const account = ((await created.json()) as { data: { uid: string } }).data;
    expect(created.status).toBe(201);
    await stop();

    const rotated = await runCli(['secrets', 'rotate', '--json'], { DATA_DIR: dataDir });
    expect(rotated.code, rotated.stderr).toBe(0);
    const result = JSON.parse(rotated.stdout) as { key_id: string; smtp_urls: number };
    expect(result.smtp_urls).toBe(1);
    expect(fs.readFileSync(keyFile, 'utf8').trim().split('\n')).toHaveLength(2);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);

    // The next start reads the file (now with two keys) and says nothing about generating one.
    server = await startServer({ DATA_DIR: dataDir, ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
    expect(server.output()).not.toMatch(/generated the key/);
    const read = await api('GET', `/api/email/accounts/${account.uid}`);
    expect(((await read.json()) as { data: { smtp_host: string } }).data.smtp_host).toBe('smtp.acme.test');
    await stop();

    // A key that did not seal them (and the key file gone): the start stops and says which key is missing.
    fs.renameSync(keyFile, `${keyFile}.bak`);
    const wrong = await startServer({ DATA_DIR: dataDir, SECRET_KEY: generateSecretKey() }).then(
      (s) => {
        server = s;
        return 'started';
      },
      (error: unknown) => String(error),
    );
    expect(wrong).toMatch(new RegExp(`encrypted under key ${result.key_id}, which is not configured`));
  }, 90_000);
});

describe.skipIf(engine !== 'postgres')('PostgreSQL without SECRET_KEY', () => {
  it('the start fails with a message that says what to set', async () => {
    const name = `remit_keys_${crypto.randomBytes(5).toString('hex')}`;
    await adminQuery(`create database ${name}`);
    try {
      const outcome = await startServer({
        DATABASE_URL: withDatabaseName(testDatabaseUrl!, name),
        SECRET_KEY: '',
      }).then(
        (s) => {
          s.child.kill('SIGKILL');
          return 'started';
        },
        (error: unknown) => String(error),
      );
      expect(outcome).toMatch(/SECRET_KEY is required with DATABASE_URL/);
    } finally {
      await adminQuery(`drop database if exists ${name} with (force)`);
    }
  }, 60_000);
});
