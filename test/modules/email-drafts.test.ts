/**
 * Email drafts (interface §2.10, §3.5, §4.6, §7; CONTRACT §2, §3): create (201) and update by uid
 * (200) through one POST, the bare record (no envelope), GET, DELETE → canceled; attachments in object
 * storage (request only, limits, bad base64); the status rules (409); the send job enqueued in the
 * saving transaction and replaced when the time changes. Workers are off here: the sending itself is
 * email-sending.test.ts.
 */
import { buffer } from 'node:stream/consumers';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailDrafts } from '../../src/modules/email/email-drafts.tables.ts';
import { OBJECT_DELETE_QUEUE } from '../../src/platform/storage/object-deletes.ts';
import { EMAIL_SEND_QUEUE } from '../../src/modules/email/email-sending.ts';
import { rawQuery } from '../../src/platform/db/client.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let account: { uid: string; email: string };
let secondAccount: { uid: string; email: string };
let foreignAccount: { uid: string; email: string };
let foreignDraft: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => Math.random().toString(36).slice(2, 8);
const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');
const HOUR = 3_600_000;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const newAccount = async (key: string, name: string) => {
    const res = await call(t.app, 'POST', '/api/email/accounts', {
      key,
      body: { email: `${name}-${tag()}@acme.test`, display_name: name },
    });
    expect(res.status, res.raw).toBe(201);
    return res.body.data as { uid: string; email: string };
  };
  account = await newAccount(p.orgA.admin.key, 'ar');
  secondAccount = await newAccount(p.orgA.admin.key, 'billing');
  foreignAccount = await newAccount(p.orgB.admin.key, 'b');
  foreignDraft = (await save(p.orgB.admin.key, { from_account_id: foreignAccount.uid })).body.uid;
});
afterAll(async () => t?.close());

function save(key: string, body: Record<string, unknown>) {
  return call(t.app, 'POST', '/api/email/drafts', { key, body });
}
async function newDraft(body: Record<string, unknown> = {}, key = p.orgA.admin.key) {
  const res = await save(key, { from_account_id: account.uid, ...body });
  expect(res.status, res.raw).toBe(201);
  return res.body;
}
const getDraft = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'GET', `/api/email/drafts/${uid}`, { key });
const cancel = (uid: string, key = p.orgA.admin.key) =>
  call(t.app, 'DELETE', `/api/email/drafts/${uid}`, { key });

async function rowOf(uid: string) {
  const [row] = await t.db.select().from(emailDrafts).where(eq(emailDrafts.uid, uid));
  return row!;
}
async function setStatus(uid: string, status: 'sending' | 'sent' | 'failed') {
  await t.db.update(emailDrafts).set({ status }).where(eq(emailDrafts.uid, uid));
}
async function job(id: string | null) {
  if (!id) return undefined;
  const [row] = await rawQuery<{
    id: string;
    state: string;
    start_after: Date;
    data: Record<string, string>;
  }>(t.db, `select id::text, state, start_after, data from pgboss.job where name = $1 and id::text = $2`, [
    EMAIL_SEND_QUEUE,
    id,
  ]);
  return row;
}
async function jobsOf(draftUid: string) {
  return rawQuery<{ id: string; state: string }>(
    t.db,
    `select id::text, state from pgboss.job where name = $1 and data->>'draft_uid' = $2 order by created_on`,
    [EMAIL_SEND_QUEUE, draftUid],
  );
}
/** The durable removal of an object the draft no longer points at (the job itself: knowledge-delete.test.ts). */
async function removalScheduled(key: string) {
  const rows = await rawQuery<{ state: string }>(
    t.db,
    `select state from pgboss.job where name = $1 and data->>'key' = $2`,
    [OBJECT_DELETE_QUEUE, key],
  );
  return rows.length === 1 && rows[0]!.state === 'created';
}
async function objectText(key: string) {
  const object = await t.deps.objectStorage.getObject(key);
  return object ? (await buffer(object.body)).toString() : null;
}

describe('POST /api/email/drafts (create)', () => {
  it('201 with the bare record (no envelope); from_email comes from the account', async () => {
    const contextId = crypto.randomUUID();
    const res = await save(p.orgA.member.key, {
      from_account_id: account.uid,
      to: ['cara@client.test'],
      cc: ['ap@client.test', 'boss@client.test'],
      bcc: ['archive@acme.test'],
      subject: 'Invoice INV-1 is overdue',
      body_text: 'Please pay.',
      body_html: '<p>Please pay.</p>',
      context_type: 'invoice',
      context_id: contextId,
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toEqual({
      uid: expect.stringMatching(UUID),
      from_account_id: account.uid,
      from_email: account.email,
      to: ['cara@client.test'],
      cc: ['ap@client.test', 'boss@client.test'],
      bcc: ['archive@acme.test'],
      subject: 'Invoice INV-1 is overdue',
      body_text: 'Please pay.',
      body_html: '<p>Please pay.</p>',
      context_type: 'invoice',
      context_id: contextId,
      planned_send_at: null,
      status: 'draft',
      sent_at: null,
      error: null,
      message_id: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(res.body.status).not.toBe('success');
    const got = await getDraft(res.body.uid, p.orgA.member.key);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('only from_account_id is required; the rest default to empty', async () => {
    const draft = await newDraft();
    expect(draft).toMatchObject({ to: [], cc: [], bcc: [], subject: '', body_text: '', body_html: '' });
    expect(draft).toMatchObject({ context_type: null, context_id: null, planned_send_at: null });
  });

  it('422 without from_account_id, or with an account that is unknown or of another organization', async () => {
    const missing = expectErrorBody(await save(p.orgA.admin.key, { subject: 'x' }), 422, 'validation_failed');
    expect(missing.errors?.[0]?.field).toBe('from_account_id');
    for (const from_account_id of [MISSING, foreignAccount.uid]) {
      const res = expectErrorBody(
        await save(p.orgA.admin.key, { from_account_id }),
        422,
        'validation_failed',
      );
      expect(res.errors?.[0]?.field).toBe('from_account_id');
    }
  });

  it('422 for addresses that are not emails, a subject with a line break, a bad date', async () => {
    for (const body of [
      { to: ['not-an-email'] },
      { cc: ['a@b.test', 'x'] },
      { bcc: 'a@b.test' },
      { to: ['a@b.test\r\nBcc: x@y.test'] },
      { subject: 'Hello\r\nBcc: evil@x.test' },
      { planned_send_at: 'tomorrow' },
      { context_id: 'nope' },
      { to: Array.from({ length: 101 }, (_, i) => `r${i}@b.test`) },
    ]) {
      expectErrorBody(await save(p.orgA.admin.key, { from_account_id: account.uid, ...body }), 422);
    }
  });

  it('403 when naming an organization the caller is not a member of', async () => {
    expectErrorBody(
      await save(p.orgA.admin.key, { organization_uid: p.orgB.uid, from_account_id: foreignAccount.uid }),
      403,
    );
  });

  commonRouteChecks(
    'POST /api/email/drafts',
    {
      method: 'POST',
      url: () => '/api/email/drafts',
      body: () => ({ from_account_id: account.uid }),
      scope: 'email:write',
      foreignOrganizationBody: ({ p }) => ({ organization_uid: p.orgB.uid, from_account_id: account.uid }),
    },
    () => ({ t, p }),
  );
});

describe('POST /api/email/drafts (update by uid)', () => {
  it('200; only the fields sent change, null clears a nullable one', async () => {
    const draft = await newDraft({
      to: ['a@client.test'],
      subject: 'Before',
      body_text: 'Text',
      context_type: 'invoice',
      context_id: crypto.randomUUID(),
    });
    const res = await save(p.orgA.admin.key, { uid: draft.uid, subject: 'After', cc: ['c@client.test'] });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toEqual({
      ...draft,
      subject: 'After',
      cc: ['c@client.test'],
      updated_at: expect.stringMatching(ISO),
    });
    const cleared = await save(p.orgA.admin.key, { uid: draft.uid, context_type: null, context_id: null });
    expect(cleared.body).toMatchObject({ context_type: null, context_id: null, subject: 'After' });
    expect((await getDraft(draft.uid)).body).toEqual(cleared.body);
  });

  it('changing from_account_id takes the new account address; an account of another organization → 422', async () => {
    const draft = await newDraft();
    const moved = await save(p.orgA.admin.key, { uid: draft.uid, from_account_id: secondAccount.uid });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ from_account_id: secondAccount.uid, from_email: secondAccount.email });
    expectErrorBody(
      await save(p.orgA.admin.key, { uid: draft.uid, from_account_id: foreignAccount.uid }),
      422,
    );
    expect((await getDraft(draft.uid)).body.from_account_id).toBe(secondAccount.uid);
  });

  it('404 for an unknown uid and for a uid of another organization (which is left unchanged)', async () => {
    expectErrorBody(await save(p.orgA.admin.key, { uid: MISSING, subject: 'x' }), 404, 'not_found');
    expectErrorBody(await save(p.orgA.admin.key, { uid: foreignDraft, subject: 'hijack' }), 404, 'not_found');
    expect((await rowOf(foreignDraft)).subject).toBe('');
  });

  it('409 for saving a sent, canceled or in-flight email; a failed one becomes a draft again', async () => {
    for (const status of ['sent', 'sending'] as const) {
      const draft = await newDraft();
      await setStatus(draft.uid, status);
      expectErrorBody(await save(p.orgA.admin.key, { uid: draft.uid, subject: 'x' }), 409, 'invalid_state');
    }
    const canceled = await newDraft();
    expect((await cancel(canceled.uid)).status).toBe(200);
    expectErrorBody(await save(p.orgA.admin.key, { uid: canceled.uid, subject: 'x' }), 409, 'invalid_state');

    const failed = await newDraft();
    await t.db
      .update(emailDrafts)
      .set({ status: 'failed', error: 'SMTP 550', messageId: '<old@acme.test>', transport: 'smtp' })
      .where(eq(emailDrafts.uid, failed.uid));
    const retried = await save(p.orgA.admin.key, { uid: failed.uid, subject: 'Fixed' });
    expect(retried.status, retried.raw).toBe(200);
    expect(retried.body).toMatchObject({ status: 'draft', error: null, message_id: null, subject: 'Fixed' });
  });
});

describe('attachments', () => {
  it('are stored in object storage, never returned, and replaced as a whole on update', async () => {
    const draft = await newDraft({
      attachments: [
        { filename: 'invoice INV-1.pdf', content_type: 'application/pdf', data_base64: b64('%PDF-1.7 one') },
        { filename: 'notes.txt', content_type: 'text/plain; charset=utf-8', data_base64: b64('two') },
      ],
    });
    expect(JSON.stringify(draft)).not.toContain('attachments');
    expect(JSON.stringify((await getDraft(draft.uid)).body)).not.toContain('data_base64');
    const stored = (await rowOf(draft.uid)).attachments;
    expect(stored.map((a) => [a.filename, a.content_type, a.size])).toEqual([
      ['invoice INV-1.pdf', 'application/pdf', 12],
      ['notes.txt', 'text/plain; charset=utf-8', 3],
    ]);
    expect(stored[0]!.storage_key).toMatch(new RegExp(`^${p.orgA.uid}/email-drafts/${draft.uid}/`));
    expect(await objectText(stored[0]!.storage_key)).toBe('%PDF-1.7 one');
    expect(await objectText(stored[1]!.storage_key)).toBe('two');

    // Saving without `attachments` keeps them; with a list replaces them (old objects removed).
    await save(p.orgA.admin.key, { uid: draft.uid, subject: 'keep' });
    expect((await rowOf(draft.uid)).attachments).toEqual(stored);
    const replaced = await save(p.orgA.admin.key, {
      uid: draft.uid,
      attachments: [{ filename: 'three.csv', content_type: 'text/csv', data_base64: b64('a,b\n1,2\n') }],
    });
    expect(replaced.status, replaced.raw).toBe(200);
    const now = (await rowOf(draft.uid)).attachments;
    expect(now.map((a) => a.filename)).toEqual(['three.csv']);
    expect(await objectText(now[0]!.storage_key)).toBe('a,b\n1,2\n');
    expect(await removalScheduled(stored[0]!.storage_key)).toBe(true);
    expect(await removalScheduled(stored[1]!.storage_key)).toBe(true);
    expect(await removalScheduled(now[0]!.storage_key)).toBe(false);
  });

  it('422 for bad base64, more than 10 files, or more than 10 MB in total; nothing is stored', async () => {
    const before = await t.db.select().from(emailDrafts);
    for (const data_base64 of ['not base64!', 'abc', 'YQ=a', 'Y===']) {
      const res = await save(p.orgA.admin.key, {
        from_account_id: account.uid,
        attachments: [{ filename: 'a.txt', content_type: 'text/plain', data_base64 }],
      });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.[0]?.field).toBe('attachments[0].data_base64');
    }
    const eleven = Array.from({ length: 11 }, (_, i) => ({
      filename: `f${i}.txt`,
      content_type: 'text/plain',
      data_base64: b64('x'),
    }));
    expectErrorBody(await save(p.orgA.admin.key, { from_account_id: account.uid, attachments: eleven }), 422);
    const overHalf = b64(Buffer.alloc(5.1 * 1024 * 1024, 1));
    const tooBig = await save(p.orgA.admin.key, {
      from_account_id: account.uid,
      attachments: [
        { filename: 'a.bin', content_type: 'application/octet-stream', data_base64: overHalf },
        { filename: 'b.bin', content_type: 'application/octet-stream', data_base64: overHalf },
      ],
    });
    expect(expectErrorBody(tooBig, 422).errors?.[0]?.field).toBe('attachments');
    expect(await t.db.select().from(emailDrafts)).toHaveLength(before.length);
    for (const bad of [
      { filename: '', content_type: 'text/plain', data_base64: '' },
      { filename: 'a.txt', content_type: 'nonsense', data_base64: '' },
      { filename: 'a.txt', data_base64: '' },
    ]) {
      expectErrorBody(
        await save(p.orgA.admin.key, { from_account_id: account.uid, attachments: [bad] }),
        422,
      );
    }
  });

  it('accepts 10 MB in total (a body far over the 1 MB default); a larger body → 413', async () => {
    const fiveMb = Buffer.alloc(5 * 1024 * 1024, 7);
    const res = await save(p.orgA.admin.key, {
      from_account_id: account.uid,
      attachments: [
        { filename: 'a.bin', content_type: 'application/octet-stream', data_base64: b64(fiveMb) },
        { filename: 'b.bin', content_type: 'application/octet-stream', data_base64: b64(fiveMb) },
      ],
    });
    expect(res.status, res.raw.slice(0, 300)).toBe(201);
    expect((await rowOf(res.body.uid)).attachments.map((a) => a.size)).toEqual([
      fiveMb.length,
      fiveMb.length,
    ]);
    const huge = await call(t.app, 'POST', '/api/email/drafts', {
      key: p.orgA.admin.key,
      body: { from_account_id: account.uid, body_text: 'x'.repeat(17 * 1024 * 1024) },
    });
    expectErrorBody(huge, 413);
  });
});

describe('GET /api/email/drafts/{uid}', () => {
  it('404 when the draft does not exist', async () => {
    expectErrorBody(await getDraft(MISSING), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/email/drafts/{uid}',
    {
      method: 'GET',
      url: async () => `/api/email/drafts/${(await newDraft()).uid}`,
      scope: 'email:read',
      foreignUrl: () => `/api/email/drafts/${foreignDraft}`,
    },
    () => ({ t, p }),
  );
});

describe('DELETE /api/email/drafts/{uid}', () => {
  it('cancels: 200 with the record, canceled; its job is dropped and its attachments removed', async () => {
    const draft = await newDraft({
      planned_send_at: new Date(Date.now() + HOUR).toISOString(),
      attachments: [{ filename: 'a.txt', content_type: 'text/plain', data_base64: b64('bye') }],
    });
    const before = await rowOf(draft.uid);
    expect((await job(before.sendJobId))?.state).toBe('created');
    const res = await cancel(draft.uid);
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      uid: draft.uid,
      status: 'canceled',
      planned_send_at: draft.planned_send_at,
    });
    expect((await job(before.sendJobId))?.state).toBe('cancelled');
    expect(await removalScheduled(before.attachments[0]!.storage_key)).toBe(true);
    expect((await getDraft(draft.uid)).body.status).toBe('canceled');
  });

  it('409 for a canceled, sent or in-flight email; a failed one may be canceled', async () => {
    const draft = await newDraft();
    await cancel(draft.uid);
    expectErrorBody(await cancel(draft.uid), 409, 'invalid_state');
    for (const status of ['sent', 'sending'] as const) {
      const other = await newDraft();
      await setStatus(other.uid, status);
      expectErrorBody(await cancel(other.uid), 409, 'invalid_state');
    }
    const failed = await newDraft();
    await setStatus(failed.uid, 'failed');
    expect((await cancel(failed.uid)).body.status).toBe('canceled');
  });

  it('404 for an unknown uid', async () => {
    expectErrorBody(await cancel(MISSING), 404);
  });

  it('records email.canceled (status draft → canceled, attachments gone); a refused cancel records nothing', async () => {
    const draft = await newDraft({
      subject: 'Reminder',
      attachments: [{ filename: 'a.txt', content_type: 'text/plain', data_base64: b64('x') }],
    });
    expect((await cancel(draft.uid, p.orgA.member.key)).status).toBe(200);
    const actions = async (uid: string) =>
      rawQuery<{ action: string; actor_user_uid: string; changes: Record<string, unknown> }>(
        t.db,
        `select action, actor_user_uid::text, changes from audit_events where entity_uid = $1 order by occurred_at, action`,
        [uid],
      );
    const events = await actions(draft.uid);
    expect(events.map((e) => e.action)).toEqual(['email.created', 'email.canceled']);
    expect(events[1]).toMatchObject({
      actor_user_uid: p.orgA.member.userUid,
      changes: {
        status: { before: 'draft', after: 'canceled' },
        attachments: { before: [{ filename: 'a.txt', content_type: 'text/plain', size: 1 }], after: [] },
      },
    });
    const sent = await newDraft();
    await setStatus(sent.uid, 'sent');
    const refused = await cancel(sent.uid);
    expectErrorBody(refused, 409, 'invalid_state');
    expect(refused.body.message).toBe('A sent email cannot be canceled');
    expect((await actions(sent.uid)).map((e) => e.action)).toEqual(['email.created']);
  });

  commonRouteChecks(
    'DELETE /api/email/drafts/{uid}',
    {
      method: 'DELETE',
      url: async () => `/api/email/drafts/${(await newDraft()).uid}`,
      scope: 'email:write',
      foreignUrl: () => `/api/email/drafts/${foreignDraft}`,
    },
    () => ({ t, p }),
  );
});

describe('scheduling (the job is enqueued with the row, replaced when the time changes)', () => {
  it('a planned_send_at enqueues one send job starting then', async () => {
    const at = new Date(Date.now() + 2 * HOUR);
    const draft = await newDraft({ planned_send_at: at.toISOString() });
    expect(draft.planned_send_at).toBe(at.toISOString());
    const row = await rowOf(draft.uid);
    const sendJob = await job(row.sendJobId);
    expect(sendJob).toMatchObject({
      state: 'created',
      data: { organization_uid: p.orgA.uid, draft_uid: draft.uid },
    });
    expect(new Date(sendJob!.start_after).getTime()).toBe(at.getTime());
    expect(await jobsOf((await newDraft()).uid)).toEqual([]);
  });

  it('a new time cancels the old job and enqueues a new one; the same time or other fields keep it', async () => {
    const draft = await newDraft({ planned_send_at: new Date(Date.now() + HOUR).toISOString() });
    const first = (await rowOf(draft.uid)).sendJobId;
    await save(p.orgA.admin.key, { uid: draft.uid, subject: 'edit', planned_send_at: draft.planned_send_at });
    expect((await rowOf(draft.uid)).sendJobId).toBe(first);

    const later = new Date(Date.now() + 5 * HOUR);
    const res = await save(p.orgA.admin.key, { uid: draft.uid, planned_send_at: later.toISOString() });
    expect(res.body.planned_send_at).toBe(later.toISOString());
    const second = (await rowOf(draft.uid)).sendJobId;
    expect(second).not.toBe(first);
    expect((await job(first))?.state).toBe('cancelled');
    expect(new Date((await job(second))!.start_after).getTime()).toBe(later.getTime());

    // null unschedules: no job pending.
    const off = await save(p.orgA.admin.key, { uid: draft.uid, planned_send_at: null });
    expect(off.body.planned_send_at).toBeNull();
    expect((await rowOf(draft.uid)).sendJobId).toBeNull();
    expect((await jobsOf(draft.uid)).map((j) => j.state)).toEqual(['cancelled', 'cancelled']);
  });

  it('a refused save enqueues nothing', async () => {
    const draft = await newDraft();
    await setStatus(draft.uid, 'sent');
    expectErrorBody(
      await save(p.orgA.admin.key, { uid: draft.uid, planned_send_at: new Date().toISOString() }),
      409,
    );
    expect(await jobsOf(draft.uid)).toEqual([]);
    const rows = await t.db
      .select()
      .from(emailDrafts)
      .where(and(eq(emailDrafts.uid, draft.uid), eq(emailDrafts.status, 'sent')));
    expect(rows[0]!.sendJobId).toBeNull();
  });
});
