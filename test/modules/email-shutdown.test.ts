import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/client.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { FakeSmtp } from '../helpers/fake-smtp.ts';
import { runCli } from '../helpers/cli.ts';
import { postToProcess } from '../helpers/http.ts';
import { startServer, type ServerProcess } from '../helpers/processes.ts';
import { engine, processDatabase, type ProcessDatabase } from '../helpers/test-database.ts';

/**
 * SIGTERM while an SMTP send is in flight: the server stops taking new jobs, lets the send finish (the
 * shutdown grace outlasts the SMTP timeout), records it as sent, and only then exits. It used to give
 * jobs 10 s: the message was delivered, the process exited before recording it, and the draft stayed
 * `sending` until a sweep marked it failed ("outcome unknown"), inviting a second send.
 * A real server process (the embedded database, so it runs once, in the PGlite suite).
 */
describe.skipIf(engine !== 'pglite')('shutdown during an SMTP send', () => {
  let smtp: FakeSmtp;
  let server: ServerProcess | undefined;
  let processDb: ProcessDatabase;
  let dataDir: string;

  beforeAll(async () => {
    smtp = await new FakeSmtp().start();
    processDb = await processDatabase('remit-shutdown-');
    dataDir = processDb.dataDir;
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await smtp?.stop();
    await processDb?.drop();
  });

  it('the in-flight send finishes and is recorded; the process then exits 0', async () => {
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], {
      DATA_DIR: dataDir,
    });
    expect(init.code, init.stderr).toBe(0);
    const key = (JSON.parse(init.stdout) as { api_key: string }).api_key;
    server = await startServer({ DATA_DIR: dataDir, SMTP_URL: smtp.url() });
    const api = (url: string, body: unknown) => postToProcess(server!.url, key, url, body);
    const account = await api('/api/email/accounts', { email: 'ar@acme.test', display_name: 'AR' });
    // The server holds the message longer than the old 10 s job grace before answering.
    let arrived!: () => void;
    const messageArrived = new Promise<void>((resolve) => (arrived = resolve));
    smtp.onMessage = async () => {
      arrived();
      await new Promise((r) => setTimeout(r, 12_000));
    };
    const draft = await api('/api/email/drafts', {
      from_account_id: account.data!.uid,
      to: ['client@client.test'],
      subject: 'Reminder',
      body_text: 'Please pay.',
      planned_send_at: new Date().toISOString(),
    });

    await messageArrived;
    server.child.kill('SIGTERM');
    const code = await server.exited;
    server = undefined;
    expect(code).toBe(0);
    expect(smtp.accepted()).toHaveLength(1);

    const database = await openDatabase({
      dataDir: path.join(dataDir, 'pglite'),
      statementTimeoutMs: 10_000,
    });
    try {
      const [row] = await rawQuery<{ status: string; message_id: string }>(
        database.db,
        `select status, message_id from email_drafts where uid = $1`,
        [draft.uid],
      );
      expect(row).toEqual({ status: 'sent', message_id: `<${draft.uid}@acme.test>` });
      expect(smtp.accepted()[0]!.parsed.messageId).toBe(`<${draft.uid}@acme.test>`);
    } finally {
      await database.close();
    }
  }, 90_000);
});
