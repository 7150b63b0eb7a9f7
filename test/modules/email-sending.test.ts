/**
 * Scheduled sending (CONTRACT §3, §6): the worker sends a due draft through a real local SMTP server
 * (accept, 550 reject, dropped connection) or, with none configured, writes an `.eml` to
 * DATA_DIR/outbox; rescheduling and cancelling leave stale jobs harmless; the sweep; and the
 * no-double-send rule for an attempt that died between "sending" and "recorded".
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { simpleParser, type AddressObject } from 'mailparser';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { emailDrafts } from '../../src/modules/email/email-drafts.tables.ts';
import {
  DEFAULT_LEASE_SECONDS,
  EMAIL_SEND_QUEUE,
  accountMailers,
  runSendJob,
  sweepEmailDrafts,
  type EmailSendingDeps,
} from '../../src/modules/email/email-sending.ts';
import { createClients } from '../../src/platform/clients.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { PGBOSS_SCHEMA } from '../../src/platform/jobs/jobs.ts';
import { OutboxMailer, outboxFileName } from '../../src/platform/mail/mailer.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakeSmtp } from '../helpers/fake-smtp.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { until } from '../helpers/until.ts';

let t: TestApp;
let p: Principals;
let smtp: FakeSmtp;
let operatorSmtp: FakeSmtp;
/** An account with its own SMTP server (with a login). */
let smtpAccount: { uid: string; email: string };
/** An account without one: the outbox (no SMTP_URL in this app). */
let outboxAccount: { uid: string; email: string };
let sending: EmailSendingDeps;
let outboxDir: string;

const HOUR = 3_600_000;
const tag = () => Math.random().toString(36).slice(2, 8);
const b64 = (text: string) => Buffer.from(text).toString('base64');

beforeAll(async () => {
  smtp = await new FakeSmtp({ user: 'ar@acme.test', pass: 'p@ss:word' }).start();
  operatorSmtp = await new FakeSmtp().start();
  t = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const account = async (body: Record<string, unknown>) => {
    const res = await call(t.app, 'POST', '/api/email/accounts', { key: p.orgA.admin.key, body });
    expect(res.status, res.raw).toBe(201);
    return res.body.data as { uid: string; email: string };
  };
  smtpAccount = await account({
    email: `ar-${tag()}@acme.test`,
    display_name: 'Acme Receivables',
    smtp_url: smtp.url(),
  });
  outboxAccount = await account({ email: `billing-${tag()}@acme.test`, display_name: 'Acme Billing' });
  outboxDir = path.join(t.config.dataDir, 'outbox');
  sending = {
    db: t.db,
    jobs: t.deps.jobs,
    storage: t.deps.objectStorage,
    mailers: accountMailers(t.deps.clients.mail, t.deps.secrets),
    leaseSeconds: DEFAULT_LEASE_SECONDS,
  };
});
afterAll(async () => {
  await t?.close();
  await smtp?.stop();
  await operatorSmtp?.stop();
});
beforeEach(() => {
  smtp.behaviour = { kind: 'accept' };
  smtp.onMessage = undefined;
});

async function newDraft(body: Record<string, unknown>) {
  const res = await call(t.app, 'POST', '/api/email/drafts', { key: p.orgA.admin.key, body });
  expect(res.status, res.raw).toBe(201);
  return res.body as { uid: string; planned_send_at: string | null };
}
const getDraft = async (uid: string) =>
  (await call(t.app, 'GET', `/api/email/drafts/${uid}`, { key: p.orgA.admin.key })).body;
async function rowOf(uid: string) {
  const [row] = await t.db.select().from(emailDrafts).where(eq(emailDrafts.uid, uid));
  return row!;
}

/** Polls until the worker has finished with the draft (sent or failed). */
function settled(uid: string) {
  return until(async () => {
    const draft = await getDraft(uid);
    return (draft.status === 'sent' || draft.status === 'failed') && draft;
  }, `draft ${uid} to be sent or failed`);
}
const addresses = (field: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(field) ? field : field ? [field] : []).flatMap((a) => a.value.map((v) => v.address));
const now = () => new Date().toISOString();
const received = (messageId: string) => smtp.received.filter((m) => m.parsed.messageId === messageId);

/** A draft in the state a dead attempt leaves: `sending`, its Message-ID recorded, the lease run out. */
async function deadAttempt(accountUid: string, transport: 'outbox' | 'smtp', messageId: string) {
  const draft = await newDraft({ from_account_id: accountUid, to: ['late@client.test'], subject: 'Crash' });
  await t.db
    .update(emailDrafts)
    .set({
      status: 'sending',
      plannedSendAt: sql`now() - interval '5 minutes'`,
      messageId,
      transport,
      sendAttempts: 1,
      sendingLeaseUntil: sql`now() - interval '1 second'`,
    })
    .where(eq(emailDrafts.uid, draft.uid));
  return draft.uid;
}
const job = (uid: string) => ({ organization_uid: p.orgA.uid, draft_uid: uid });

describe('SMTP (the account smtp_url, a real server on 127.0.0.1)', () => {
  it('sends a due draft: envelope with cc and bcc, headers, attachment, login; sent with sent_at', async () => {
    // What the database said while the server held the message: the attempt was recorded first.
    const duringSend: { status: string; messageId: string | null; lease: Date | null }[] = [];
    smtp.onMessage = async (m) => {
      const [row] = await t.db
        .select()
        .from(emailDrafts)
        .where(eq(emailDrafts.messageId, m.parsed.messageId ?? ''));
      if (row)
        duringSend.push({ status: row.status, messageId: row.messageId, lease: row.sendingLeaseUntil });
    };
    const before = Date.now();
    const draft = await newDraft({
      from_account_id: smtpAccount.uid,
      to: ['cara@client.test'],
      cc: ['ap@client.test'],
      bcc: ['archive@acme.test'],
      subject: 'Invoice INV-7 — 3 days overdue',
      body_text: 'Please pay INV-7.',
      body_html: '<p>Please pay <b>INV-7</b>.</p>',
      attachments: [
        { filename: 'INV-7.pdf', content_type: 'application/pdf', data_base64: b64('%PDF-1.7 INV-7') },
      ],
      planned_send_at: now(),
    });
    const done = await settled(draft.uid);
    expect(done).toMatchObject({
      status: 'sent',
      error: null,
      message_id: expect.stringMatching(/^<.+@acme\.test>$/),
    });
    expect(Date.parse(done.sent_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(done.sent_at)).toBeLessThanOrEqual(Date.now());
    smtp.onMessage = undefined;
    expect(duringSend).toEqual([{ status: 'sending', messageId: done.message_id, lease: expect.any(Date) }]);

    const [mail] = received(done.message_id);
    expect(mail).toBeDefined();
    expect(mail!.outcome).toBe('accepted');
    expect(mail!.user).toBe('ar@acme.test');
    expect(mail!.from).toBe(smtpAccount.email);
    expect(mail!.recipients.sort()).toEqual(['ap@client.test', 'archive@acme.test', 'cara@client.test']);
    const parsed = mail!.parsed;
    expect(parsed.from?.value[0]).toEqual({ address: smtpAccount.email, name: 'Acme Receivables' });
    expect(addresses(parsed.to)).toEqual(['cara@client.test']);
    expect(addresses(parsed.cc)).toEqual(['ap@client.test']);
    expect(parsed.bcc).toBeUndefined();
    expect(mail!.raw.toString()).not.toMatch(/^Bcc:/im);
    expect(parsed.subject).toBe('Invoice INV-7 — 3 days overdue');
    expect(parsed.text?.trim()).toBe('Please pay INV-7.');
    expect(parsed.html).toContain('<b>INV-7</b>');
    expect(parsed.attachments.map((a) => [a.filename, a.contentType, a.content.toString()])).toEqual([
      ['INV-7.pdf', 'application/pdf', '%PDF-1.7 INV-7'],
    ]);
    expect(await rowOf(draft.uid)).toMatchObject({
      sendAttempts: 1,
      transport: 'smtp',
      sendingLeaseUntil: null,
    });
  });

  it('a 550 rejection → failed with the server error; nothing is retried', async () => {
    smtp.behaviour = { kind: 'reject', code: 550, message: 'Mailbox unavailable' };
    const draft = await newDraft({
      from_account_id: smtpAccount.uid,
      to: ['gone@client.test'],
      planned_send_at: now(),
    });
    const done = await settled(draft.uid);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/550/);
    expect(done.error).toMatch(/Mailbox unavailable/);
    expect(done.sent_at).toBeNull();
    expect(smtp.received.filter((m) => m.recipients.includes('gone@client.test'))).toHaveLength(1);
    expect(await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs })).toEqual({ enqueued: 0 });
  });

  it('a connection dropped after the whole message → failed, "outcome unknown, not resent"; never sent twice', async () => {
    smtp.behaviour = { kind: 'drop' };
    const draft = await newDraft({
      from_account_id: smtpAccount.uid,
      to: ['drop@client.test'],
      planned_send_at: now(),
    });
    const done = await settled(draft.uid);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/outcome unknown, not resent/);
    smtp.behaviour = { kind: 'accept' };
    // Neither the worker nor the sweep tries again on its own.
    await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs });
    expect(await runSendJob(sending, job(draft.uid))).toBe('skipped');
    expect(smtp.received.filter((m) => m.recipients.includes('drop@client.test'))).toHaveLength(1);
    expect((await rowOf(draft.uid)).sendAttempts).toBe(1);
  });

  it("SMTP_URL (the operator's server) when the account has none", async () => {
    const draft = await newDraft({
      from_account_id: outboxAccount.uid,
      to: ['op@client.test'],
      subject: 'Via SMTP_URL',
    });
    await t.db
      .update(emailDrafts)
      .set({ plannedSendAt: sql`now()` })
      .where(eq(emailDrafts.uid, draft.uid));
    const deps = {
      ...sending,
      mailers: accountMailers(
        createClients({ ...t.config, smtpUrl: operatorSmtp.url() }).mail,
        t.deps.secrets,
      ),
    };
    expect(await runSendJob(deps, job(draft.uid))).toBe('sent');
    expect(operatorSmtp.accepted().map((m) => m.parsed.subject)).toContain('Via SMTP_URL');
    expect((await rowOf(draft.uid)).transport).toBe('smtp');
  });

  it("an account's SMTP host that resolves to a private address is refused at send time as well", async () => {
    const draft = await newDraft({ from_account_id: smtpAccount.uid, to: ['x@client.test'] });
    await t.db
      .update(emailDrafts)
      .set({ plannedSendAt: sql`now()` })
      .where(eq(emailDrafts.uid, draft.uid));
    const strict = {
      ...sending,
      mailers: accountMailers(
        createClients({ ...t.config, allowPrivateNetworkTargets: false }).mail,
        t.deps.secrets,
      ),
    };
    expect(await runSendJob(strict, job(draft.uid))).toBe('failed');
    expect((await getDraft(draft.uid)).error).toMatch(/private/);
    expect(smtp.received.filter((m) => m.recipients.includes('x@client.test'))).toHaveLength(0);
  });
});

describe('the outbox (no SMTP configured)', () => {
  it('writes a real .eml named after the Message-ID, with Bcc kept and the attachment', async () => {
    const draft = await newDraft({
      from_account_id: outboxAccount.uid,
      to: ['cara@client.test'],
      cc: ['ap@client.test'],
      bcc: ['archive@acme.test'],
      subject: 'Statement',
      body_text: 'Attached.',
      attachments: [
        { filename: 'statement.csv', content_type: 'text/csv', data_base64: b64('inv,amount\nA-1,100\n') },
      ],
      planned_send_at: now(),
    });
    const done = await settled(draft.uid);
    expect(done.status).toBe('sent');
    const file = path.join(outboxDir, outboxFileName(done.message_id));
    const parsed = await simpleParser(await fs.readFile(file));
    expect(parsed.messageId).toBe(done.message_id);
    expect(parsed.from?.value[0]).toEqual({ address: outboxAccount.email, name: 'Acme Billing' });
    expect(addresses(parsed.to)).toEqual(['cara@client.test']);
    expect(addresses(parsed.cc)).toEqual(['ap@client.test']);
    expect(addresses(parsed.bcc)).toEqual(['archive@acme.test']);
    expect(parsed.subject).toBe('Statement');
    expect(parsed.text?.trim()).toBe('Attached.');
    expect(parsed.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([
      ['statement.csv', 'inv,amount\nA-1,100\n'],
    ]);
    expect((await fs.readdir(outboxDir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('rescheduling and cancelling', () => {
  it('moving the time earlier sends at the new time; the old job is cancelled', async () => {
    const draft = await newDraft({
      from_account_id: outboxAccount.uid,
      to: ['r@client.test'],
      planned_send_at: new Date(Date.now() + HOUR).toISOString(),
    });
    const oldJob = (await rowOf(draft.uid)).sendJobId!;
    const res = await call(t.app, 'POST', '/api/email/drafts', {
      key: p.orgA.admin.key,
      body: { uid: draft.uid, planned_send_at: now() },
    });
    expect(res.status).toBe(200);
    expect((await settled(draft.uid)).status).toBe('sent');
    expect((await t.deps.jobs.getJob(EMAIL_SEND_QUEUE, oldJob))?.state).toBe('cancelled');
  });

  it('a stale job (the draft moved later) does nothing, even if its cancellation was lost', async () => {
    const draft = await newDraft({
      from_account_id: smtpAccount.uid,
      to: ['later@client.test'],
      planned_send_at: new Date(Date.now() + HOUR).toISOString(),
    });
    // The job of an earlier, due time runs anyway: it finds the draft not due and leaves it.
    expect(await runSendJob(sending, job(draft.uid))).toBe('skipped');
    expect((await getDraft(draft.uid)).status).toBe('draft');
    expect(smtp.received.filter((m) => m.recipients.includes('later@client.test'))).toHaveLength(0);
  });

  it('a canceled draft is never sent, whatever job still runs for it', async () => {
    const draft = await newDraft({
      from_account_id: smtpAccount.uid,
      to: ['canceled@client.test'],
      planned_send_at: new Date(Date.now() + HOUR).toISOString(),
    });
    const res = await call(t.app, 'DELETE', `/api/email/drafts/${draft.uid}`, { key: p.orgA.admin.key });
    expect(res.body.status).toBe('canceled');
    await t.db
      .update(emailDrafts)
      .set({ plannedSendAt: sql`now()` })
      .where(eq(emailDrafts.uid, draft.uid));
    expect(await runSendJob(sending, job(draft.uid))).toBe('skipped');
    expect(await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs })).toEqual({ enqueued: 0 });
    expect(smtp.received.filter((m) => m.recipients.includes('canceled@client.test'))).toHaveLength(0);
  });
});

describe('no double send', () => {
  it('outbox: the .eml of the recorded Message-ID exists → sent, not written again', async () => {
    const messageId = `<crash-${tag()}@acme.test>`;
    const uid = await deadAttempt(outboxAccount.uid, 'outbox', messageId);
    await new OutboxMailer(outboxDir).send({
      messageId,
      from: { address: outboxAccount.email },
      to: ['late@client.test'],
      cc: [],
      bcc: [],
      subject: 'Crash',
      text: '',
      html: '',
      attachments: [],
    });
    const file = path.join(outboxDir, outboxFileName(messageId));
    const before = await fs.readFile(file);
    const mtime = (await fs.stat(file)).mtimeMs;
    expect(await runSendJob(sending, job(uid))).toBe('sent');
    expect(await fs.readFile(file)).toEqual(before);
    expect((await fs.stat(file)).mtimeMs).toBe(mtime);
    expect(await rowOf(uid)).toMatchObject({ status: 'sent', messageId, sendAttempts: 2 });
  });

  it('outbox: no file → nothing went out → sent now, under the same Message-ID', async () => {
    const messageId = `<early-${tag()}@acme.test>`;
    const uid = await deadAttempt(outboxAccount.uid, 'outbox', messageId);
    expect(await runSendJob(sending, job(uid))).toBe('sent');
    const parsed = await simpleParser(await fs.readFile(path.join(outboxDir, outboxFileName(messageId))));
    expect(parsed.messageId).toBe(messageId);
    expect(await rowOf(uid)).toMatchObject({ status: 'sent', sendAttempts: 2 });
  });

  it('SMTP: the server cannot be asked → failed "outcome unknown, not resent", nothing sent', async () => {
    const messageId = `<smtp-crash-${tag()}@acme.test>`;
    const uid = await deadAttempt(smtpAccount.uid, 'smtp', messageId);
    const before = smtp.received.length;
    expect(await runSendJob(sending, job(uid))).toBe('failed');
    const draft = await getDraft(uid);
    expect(draft).toMatchObject({ status: 'failed', message_id: messageId });
    expect(draft.error).toMatch(/outcome unknown, not resent/);
    expect(smtp.received.length).toBe(before);
  });

  it('a live lease (another worker mid-send) is left alone', async () => {
    const uid = await deadAttempt(smtpAccount.uid, 'smtp', `<live-${tag()}@acme.test>`);
    await t.db
      .update(emailDrafts)
      .set({ sendingLeaseUntil: sql`now() + interval '10 minutes'` })
      .where(eq(emailDrafts.uid, uid));
    expect(await runSendJob(sending, job(uid))).toBe('in_progress');
    expect((await rowOf(uid)).status).toBe('sending');
    expect(await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs })).toEqual({ enqueued: 0 });
  });

  it('two workers on one due draft: one sends, the other does nothing', async () => {
    const draft = await newDraft({
      from_account_id: smtpAccount.uid,
      to: ['twice@client.test'],
      subject: 'Once',
    });
    await t.db
      .update(emailDrafts)
      .set({ plannedSendAt: sql`now()` })
      .where(eq(emailDrafts.uid, draft.uid));
    const results = await Promise.all([
      runSendJob(sending, job(draft.uid)),
      runSendJob(sending, job(draft.uid)),
    ]);
    // The other does nothing: it lost the claim ('skipped'), or read the draft after the winner's claim
    // and found its lease live ('in_progress'), depending on how the two interleave.
    expect(results.filter((r) => r === 'sent')).toHaveLength(1);
    expect(['skipped', 'in_progress']).toContain(results.find((r) => r !== 'sent'));
    expect(smtp.received.filter((m) => m.recipients.includes('twice@client.test'))).toHaveLength(1);
  });
});

describe('the sweep (every minute)', () => {
  it('enqueues due drafts and dead attempts that have no pending job, and only those', async () => {
    // Due, but its job is gone (say, a queue purged by hand).
    const lost = await newDraft({ from_account_id: outboxAccount.uid, to: ['lost@client.test'] });
    await t.db
      .update(emailDrafts)
      .set({ plannedSendAt: sql`now() - interval '2 minutes'` })
      .where(eq(emailDrafts.uid, lost.uid));
    // A dead outbox attempt whose job is gone too.
    const dead = await deadAttempt(outboxAccount.uid, 'outbox', `<sweep-${tag()}@acme.test>`);
    // Not due yet: left alone.
    const future = await newDraft({
      from_account_id: outboxAccount.uid,
      planned_send_at: new Date(Date.now() + HOUR).toISOString(),
    });

    const candidates = await rawQuery<{ uid: string }>(
      t.db,
      `select uid::text from email_drafts where uid = any($1::uuid[]) and send_job_id is null`,
      [[lost.uid, dead]],
    );
    expect(candidates).toHaveLength(2);
    const { enqueued } = await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs });
    expect(enqueued).toBe(2);
    expect((await settled(lost.uid)).status).toBe('sent');
    expect((await settled(dead)).status).toBe('sent');
    expect((await getDraft(future.uid)).status).toBe('draft');
    expect(await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs })).toEqual({ enqueued: 0 });
  });

  it("a dead worker's attempt is taken up once its lease ran out, although its job still shows active", async () => {
    // kill -9 during a send leaves the draft 'sending' and its job 'active' until the queue's own
    // expiry (15 min); the lease (EMAIL_SEND_LEASE_S) is what decides.
    const dead = await deadAttempt(outboxAccount.uid, 'outbox', `<active-${tag()}@acme.test>`);
    const jobId = await t.db.transaction((tx) => t.deps.jobs.enqueue(tx, EMAIL_SEND_QUEUE, job(dead)));
    await rawQuery(
      t.db,
      `update ${PGBOSS_SCHEMA}.job set state = 'active', started_on = now() where id = $1`,
      [jobId],
    );
    await t.db.update(emailDrafts).set({ sendJobId: jobId }).where(eq(emailDrafts.uid, dead));
    // A live attempt (lease not run out) with an active job is left alone.
    const live = await deadAttempt(outboxAccount.uid, 'outbox', `<live-${tag()}@acme.test>`);
    await t.db
      .update(emailDrafts)
      .set({ sendingLeaseUntil: sql`now() + interval '5 minutes'` })
      .where(eq(emailDrafts.uid, live));

    expect(await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs })).toEqual({ enqueued: 1 });
    // Nothing had reached the outbox: sent now, under the attempt's own Message-ID.
    const finished = await settled(dead);
    expect(finished.status).toBe('sent');
    expect((await getDraft(live)).status).toBe('sending');
  });

  it('a queued job (not yet run) still stands in the way of the sweep', async () => {
    const dead = await deadAttempt(outboxAccount.uid, 'outbox', `<queued-${tag()}@acme.test>`);
    const jobId = await t.db.transaction((tx) =>
      t.deps.jobs.enqueue(tx, EMAIL_SEND_QUEUE, job(dead), { startAfter: new Date(Date.now() + HOUR) }),
    );
    await t.db.update(emailDrafts).set({ sendJobId: jobId }).where(eq(emailDrafts.uid, dead));
    expect(await sweepEmailDrafts({ db: t.db, jobs: t.deps.jobs })).toEqual({ enqueued: 0 });
  });
});

describe('one Message-ID per draft', () => {
  it('every attempt of a draft uses <draft uid@sender domain>, so a receiver can drop a duplicate', async () => {
    const draft = await newDraft({
      from_account_id: outboxAccount.uid,
      to: ['id@client.test'],
      planned_send_at: new Date().toISOString(),
    });
    const sent = await settled(draft.uid);
    expect(sent.status).toBe('sent');
    expect(sent.message_id).toBe(`<${draft.uid}@acme.test>`);
  });
});
