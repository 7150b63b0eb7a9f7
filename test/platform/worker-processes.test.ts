import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSmtp, type ReceivedMail } from '../helpers/fake-smtp.ts';
import { postToProcess } from '../helpers/http.ts';
import { startServer, startWorker, type ServerProcess, type WorkerProcess } from '../helpers/processes.ts';
import { runCli } from '../helpers/cli.ts';
import { adminQuery, engine, testDatabaseUrl, withDatabaseName } from '../helpers/test-database.ts';

/**
 * The process layout of docs/operations.md, for real: two API processes (RUN_WORKERS=false) and two
 * `remit worker` processes on one fresh PostgreSQL database, a dozen emails due at once through an SMTP
 * server that holds each message until the test lets it go. With both workers mid-send, one is killed
 * with SIGKILL. The effect is counted at the SMTP server, not in the queue's rows:
 *
 * - every other draft is delivered exactly once (the surviving worker sends them all);
 * - the killed worker's draft arrived once and is never sent again: once its lease runs out it ends
 *   `failed`, "SMTP outcome unknown, not resent" (docs/email-sending.md#no-double-send);
 * - every send job ends `completed`, the dead worker's too: it expires with the lease and its retry finds
 *   the attempt settled;
 * - the API processes never fetch a job nor run the queue's cron, and each scheduled job is created once
 *   per minute although two workers run the scheduler.
 *
 * The lease (EMAIL_SEND_LEASE_S=30) comes from the configuration; the waits poll with a deadline. It
 * also bounds the SMTP exchange to 25 s, which must outlast a held message's wait for the other worker
 * to start and take one too (both start together, in about a second). The queue's maintenance, which
 * expires the dead worker's job so that it is retried, runs every 2 s (JOB_MAINTENANCE_INTERVAL_S)
 * instead of pg-boss's 120 s: the retry comes once the lease has run out, not up to two minutes later.
 */
const LEASE_S = 30;
const DRAFTS = 12;

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.skipIf(engine !== 'postgres')('API processes and workers on one PostgreSQL', () => {
  let name: string;
  let url: string;
  let client: pg.Client;
  let smtp: FakeSmtp;
  let dataDir: string;
  const apis: ServerProcess[] = [];
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    name = `remit_workers_${crypto.randomBytes(5).toString('hex')}`;
    await adminQuery(`create database ${name}`);
    url = withDatabaseName(testDatabaseUrl!, name);
    smtp = await new FakeSmtp().start();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-workers-'));
  });
  afterAll(async () => {
    for (const p of [...apis, ...workers]) p.child.kill('SIGKILL');
    await client?.end();
    await smtp?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    await adminQuery(`drop database if exists ${name} with (force)`);
  });

  const query = async <T>(text: string, values: unknown[] = []) =>
    (await client.query(text, values)).rows as T[];
  const dbNow = async () => (await query<{ now: Date }>(`select now()`))[0]!.now;

  it('a worker killed mid-send: every email goes out once, every job ends', async () => {
    const env = {
      DATABASE_URL: url,
      DATA_DIR: dataDir,
      SMTP_URL: smtp.url(),
      EMAIL_SEND_LEASE_S: String(LEASE_S),
      JOB_MAINTENANCE_INTERVAL_S: '2',
    };
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], env);
    expect(init.code, init.stderr).toBe(0);
    const key = (JSON.parse(init.stdout) as { api_key: string }).api_key;
    client = new pg.Client({ connectionString: url });
    await client.connect();

    apis.push(...(await Promise.all([0, 1].map(() => startServer({ ...env, RUN_WORKERS: 'false' })))));
    // Neither API process runs the queue's scheduler (it would have stamped cron_on at its start).
    expect(await query(`select cron_on from pgboss.version`)).toEqual([{ cron_on: null }]);

    let n = 0;
    // Each request to the next API process in turn.
    const api = (url: string, body: unknown) => postToProcess(apis[n++ % 2]!.url, key, url, body);
    const account = await api('/api/email/accounts', { email: 'ar@acme.test', display_name: 'AR' });
    const drafts: string[] = [];
    for (let i = 0; i < DRAFTS; i++) {
      const draft = await api('/api/email/drafts', {
        from_account_id: account.data!.uid,
        to: [`client${i}@client.test`],
        subject: `Reminder ${i}`,
        body_text: 'Please pay.',
        planned_send_at: new Date().toISOString(),
      });
      drafts.push(draft.uid!);
    }
    const sendJobs = () =>
      query<{ id: string; state: string; started_on: Date | null; retry_count: number; data: unknown }>(
        `select id, state, started_on, retry_count, data from pgboss.job where name = 'remit.email.send'`,
      );
    expect((await sendJobs()).map((j) => j.state)).toEqual(Array(DRAFTS).fill('created'));
    const workersFrom = await dbNow();

    // Each message is held at the server until the test lets it go; a worker sends one at a time.
    const held: { mail: ReceivedMail; release: () => void }[] = [];
    let holding = true;
    smtp.onMessage = (mail) =>
      holding ? new Promise<void>((release) => held.push({ mail, release })) : Promise.resolve();

    workers.push(...(await Promise.all([0, 1].map(() => startWorker(env)))));
    await until('both workers mid-send', async () => (held.length >= 2 ? true : undefined), 60_000);
    expect(new Set(held.map((h) => h.mail.sessionId)).size).toBe(2);

    const [killed, survivor] = workers as [WorkerProcess, WorkerProcess];
    killed.child.kill('SIGKILL');
    await killed.exited;
    // Its connection closes with it: that tells which of the two held messages was the killed worker's.
    const lost = await until(
      "the killed worker's connection to close",
      async () => held.find((h) => smtp.closedSessions.has(h.mail.sessionId)),
      30_000,
    );
    holding = false;
    for (const h of held) h.release();
    const lostMessageId = lost.mail.parsed.messageId!;

    const finalDrafts = await until(
      'every draft to be settled',
      async () => {
        const rows = await query<{ uid: string; status: string; error: string | null; message_id: string }>(
          `select uid, status, error, message_id from email_drafts`,
        );
        return rows.every((r) => r.status === 'sent' || r.status === 'failed') ? rows : undefined;
      },
      240_000,
    );
    const jobs = await until(
      'every send job to end',
      async () => {
        const rows = await sendJobs();
        return rows.every((j) => j.state === 'completed') ? rows : undefined;
      },
      240_000,
    );

    // The effect, counted at the SMTP server: each draft's Message-ID arrived exactly once.
    expect(finalDrafts.map((d) => d.uid).sort()).toEqual([...drafts].sort());
    const arrivals = new Map<string, number>();
    for (const mail of smtp.received)
      arrivals.set(mail.parsed.messageId!, (arrivals.get(mail.parsed.messageId!) ?? 0) + 1);
    for (const draft of finalDrafts) expect(arrivals.get(draft.message_id), draft.uid).toBe(1);
    expect(smtp.received).toHaveLength(DRAFTS);

    // The killed worker's attempt: the server may have it, so it is not sent again (the documented rule).
    const lostDraft = finalDrafts.find((d) => d.message_id === lostMessageId)!;
    expect(lostDraft.status).toBe('failed');
    expect(lostDraft.error).toMatch(/^SMTP outcome unknown, not resent/);
    expect(finalDrafts.filter((d) => d.uid !== lostDraft.uid).map((d) => [d.status, d.error])).toEqual(
      Array(DRAFTS - 1).fill(['sent', null]),
    );

    // Every job ended; the dead worker's own job expired with the lease and was retried once.
    const lostJobs = jobs.filter((j) => (j.data as { draft_uid: string }).draft_uid === lostDraft.uid);
    expect(lostJobs.some((j) => j.retry_count === 1)).toBe(true);
    // Only the workers ever fetched a job.
    for (const job of jobs) expect(job.started_on!.getTime()).toBeGreaterThanOrEqual(workersFrom.getTime());

    // Each scheduled job once per minute, although two workers run the scheduler.
    const end = await dbNow();
    const minutes = Math.floor((end.getTime() - workersFrom.getTime()) / 60_000) + 2;
    const scheduled = await query<{ name: string; count: number }>(
      `select name, count(*)::int as count from pgboss.job
        where name in ('remit.email.sweep', 'remit.billing.reconcile', 'remit.agent.schedule')
        group by name order by name`,
    );
    expect(scheduled.map((s) => s.name)).toEqual([
      'remit.agent.schedule',
      'remit.billing.reconcile',
      'remit.email.sweep',
    ]);
    for (const s of scheduled) expect(s.count, s.name).toBeLessThanOrEqual(minutes);

    // Everything still running stops cleanly.
    for (const p of [...apis, survivor]) p.child.kill('SIGTERM');
    expect(await Promise.all([...apis, survivor].map((p) => p.exited))).toEqual([0, 0, 0]);
    apis.length = 0;
    workers.length = 0;
  }, 420_000);
});
