/**
 * `GET /api/email/drafts` (docs/email-sending.md#the-list): the organization's emails, enveloped and
 * paged like every list, each item the record `GET /api/email/drafts/{uid}` answers; filters by
 * status, context, text and schedule; the sorts; 400s; the common route checks; members see what
 * admins see; another organization's emails never appear. Workers are off: statuses other than
 * draft and canceled are set in the table, as email-drafts.test.ts does.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailDrafts } from '../../src/modules/email/email-drafts.tables.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;
let accountUid: string;
let foreignDraft: string;
const invoiceUid = crypto.randomUUID();
const otherInvoiceUid = crypto.randomUUID();
const HOUR = 3_600_000;
/** The drafts of orgA made in beforeAll, by name. */
const d: Record<string, string> = {};

function list(query = '', key = p.orgA.admin.key) {
  return call(t.app, 'GET', `/api/email/drafts${query}`, { key });
}
async function uidsOf(query: string, key = p.orgA.admin.key): Promise<string[]> {
  const res = await list(query, key);
  expect(res.status, res.raw).toBe(200);
  return (res.body.data.items as { uid: string }[]).map((item) => item.uid);
}
/** The names of `uids`, for readable failures. */
const names = (uids: string[]) => uids.map((uid) => Object.keys(d).find((k) => d[k] === uid) ?? uid);

async function save(body: Record<string, unknown>, key = p.orgA.admin.key): Promise<string> {
  const res = await call(t.app, 'POST', '/api/email/drafts', {
    key,
    body: { from_account_id: accountUid, ...body },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.uid as string;
}
async function setRow(uid: string, values: Partial<typeof emailDrafts.$inferInsert>) {
  await t.db.update(emailDrafts).set(values).where(eq(emailDrafts.uid, uid));
}

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const account = await call(t.app, 'POST', '/api/email/accounts', {
    key: p.orgA.admin.key,
    body: { email: 'ar@list.test', display_name: 'AR' },
  });
  accountUid = account.body.data.uid;
  const foreignAccount = await call(t.app, 'POST', '/api/email/accounts', {
    key: p.orgB.admin.key,
    body: { email: 'ar@other.test', display_name: 'B' },
  });
  foreignDraft = (
    await call(t.app, 'POST', '/api/email/drafts', {
      key: p.orgB.admin.key,
      body: {
        from_account_id: foreignAccount.body.data.uid,
        to: ['cara@globex.test'],
        subject: 'Globex reminder from another organization',
      },
    })
  ).body.uid;

  // Made one after another, so updated_at orders them as listed here (oldest first).
  d.plain = await save({ to: ['cara@globex.test'], subject: 'Reminder: AR-1 is due' });
  d.invoice = await save({
    to: ['ap@initech.test'],
    cc: ['boss@initech.test'],
    subject: 'Invoice AR-2 is overdue',
    context_type: 'invoice',
    context_id: invoiceUid,
  });
  d.scheduled = await save({
    to: ['ap@initech.test'],
    subject: 'Second notice for AR-2',
    context_type: 'invoice',
    context_id: invoiceUid,
    planned_send_at: new Date(Date.now() + 2 * HOUR).toISOString(),
  });
  d.scheduledSooner = await save({
    to: ['hank@globex.test'],
    subject: 'Statement for Globex',
    planned_send_at: new Date(Date.now() + HOUR).toISOString(),
  });
  d.sent = await save({ bcc: ['archive_100%@acme.test'], subject: 'Thanks for paying AR-0' });
  d.failed = await save({
    to: ['nobody@initech.test'],
    subject: 'Invoice AR-3',
    context_type: 'invoice',
    context_id: otherInvoiceUid,
  });
  d.canceled = await save({ to: ['cara@globex.test'], subject: 'Wrong amount' });
  d.member = await save({ to: ['x@y.test'], subject: 'By a member' }, p.orgA.member.key);
  await setRow(d.sent, {
    status: 'sent',
    plannedSendAt: new Date(Date.now() - 3 * HOUR),
    sentAt: new Date(Date.now() - 3 * HOUR),
  });
  await setRow(d.failed, {
    status: 'failed',
    plannedSendAt: new Date(Date.now() - HOUR),
    error: 'SMTP 550 mailbox unavailable',
  });
  expect(
    (await call(t.app, 'DELETE', `/api/email/drafts/${d.canceled}`, { key: p.orgA.admin.key })).status,
  ).toBe(200);
  // Touch the member's draft last, so it is the newest change.
  await call(t.app, 'POST', '/api/email/drafts', {
    key: p.orgA.member.key,
    body: { uid: d.member, subject: 'By a member, edited' },
  });
});
afterAll(async () => t?.close());

describe('GET /api/email/drafts', () => {
  it('200 with the envelope; the items are the records GET /api/email/drafts/{uid} answers', async () => {
    const res = await list();
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: 'Email drafts' });
    expect(res.body.data._meta).toEqual({ page: 1, per_page: 25, total_pages: 1, total_items: 8 });
    const items = res.body.data.items as { uid: string }[];
    const one = await call(t.app, 'GET', `/api/email/drafts/${d.invoice}`, { key: p.orgA.admin.key });
    expect(items.find((item) => item.uid === d.invoice)).toEqual(one.body);
    expect(one.body).toMatchObject({ cc: ['boss@initech.test'], context_id: invoiceUid, status: 'draft' });
  });

  it('newest change first by default; the other sorts, emails without the time last either way', async () => {
    expect(names(await uidsOf(''))).toEqual([
      'member',
      'canceled',
      'failed',
      'sent',
      'scheduledSooner',
      'scheduled',
      'invoice',
      'plain',
    ]);
    expect(names(await uidsOf('?sort=updated_at'))).toEqual(
      names(await uidsOf('?sort=-updated_at')).reverse(),
    );
    expect(names(await uidsOf('?sort=-created_at'))[7]).toBe('plain');
    const byTime = names(await uidsOf('?sort=planned_send_at'));
    expect(byTime.slice(0, 4)).toEqual(['sent', 'failed', 'scheduledSooner', 'scheduled']);
    expect(names(await uidsOf('?sort=-planned_send_at')).slice(0, 4)).toEqual([
      'scheduled',
      'scheduledSooner',
      'failed',
      'sent',
    ]);
    // A `+` arrives as a space: ascending too.
    expect(names(await uidsOf('?sort=%2Bsent_at'))[0]).toBe('sent');
    expect(names(await uidsOf('?sort=-sent_at'))[0]).toBe('sent');
  });

  it('status: one or several, comma-separated', async () => {
    expect(names(await uidsOf('?status=failed'))).toEqual(['failed']);
    expect(new Set(names(await uidsOf('?status=sent,canceled')))).toEqual(new Set(['sent', 'canceled']));
    expect(names(await uidsOf('?status=draft')).length).toBe(5);
    expect(await uidsOf('?status=sending')).toEqual([]);
    // Empty means no filter.
    expect((await uidsOf('?status=')).length).toBe(8);
  });

  it('context_type and context_id: the emails about one invoice', async () => {
    expect(new Set(names(await uidsOf(`?context_type=invoice&context_id=${invoiceUid}`)))).toEqual(
      new Set(['invoice', 'scheduled']),
    );
    expect(names(await uidsOf(`?context_id=${otherInvoiceUid}`))).toEqual(['failed']);
    expect((await uidsOf('?context_type=invoice')).length).toBe(3);
    expect(await uidsOf(`?context_type=party&context_id=${invoiceUid}`)).toEqual([]);
  });

  it('q: subject or any recipient, case-insensitive, LIKE characters taken literally', async () => {
    expect(new Set(names(await uidsOf('?q=GLOBEX')))).toEqual(
      new Set(['plain', 'scheduledSooner', 'canceled']),
    );
    expect(names(await uidsOf('?q=boss@initech'))).toEqual(['invoice']);
    expect(names(await uidsOf('?q=archive_100%25'))).toEqual(['sent']);
    // `%` and `_` match only themselves, `\` too.
    expect(await uidsOf('?q=%25')).toEqual([d.sent]);
    expect(await uidsOf('?q=_')).toEqual([d.sent]);
    expect(await uidsOf('?q=%5C')).toEqual([]);
    expect((await uidsOf('?q=%20%20')).length).toBe(8);
  });

  it('scheduled: true lists drafts waiting for their time; false every other email', async () => {
    expect(new Set(names(await uidsOf('?scheduled=true')))).toEqual(
      new Set(['scheduled', 'scheduledSooner']),
    );
    const rest = names(await uidsOf('?scheduled=false'));
    expect(rest.length).toBe(6);
    // The Drafts tab of the console: unscheduled drafts and failed emails.
    expect(new Set(names(await uidsOf('?status=draft,failed&scheduled=false')))).toEqual(
      new Set(['plain', 'invoice', 'failed', 'member']),
    );
  });

  it('pages: per_page, page, total_pages; past the end an empty page', async () => {
    const first = await list('?per_page=3');
    expect(first.body.data._meta).toEqual({ page: 1, per_page: 3, total_pages: 3, total_items: 8 });
    const all = [
      ...(await uidsOf('?per_page=3')),
      ...(await uidsOf('?per_page=3&page=2')),
      ...(await uidsOf('?per_page=3&page=3')),
    ];
    expect(all).toEqual(await uidsOf(''));
    expect(await uidsOf('?per_page=3&page=4')).toEqual([]);
    const filtered = await list('?status=draft&per_page=2&page=2');
    expect(filtered.body.data._meta).toEqual({ page: 2, per_page: 2, total_pages: 3, total_items: 5 });
  });

  it('400 for an unknown status, a bad sort, scheduled or context_id, per_page over 100, an unknown parameter', async () => {
    const unknown = await list('?status=draft,queued');
    expectErrorBody(unknown, 400, 'invalid_parameter');
    expect(unknown.body.message).toContain('queued');
    expect(unknown.body.errors).toEqual([{ field: 'status', message: expect.stringContaining('canceled') }]);
    expectErrorBody(await list('?status=draft,,sent'), 400, 'invalid_parameter');
    expectErrorBody(await list('?sort=subject'), 400);
    expectErrorBody(await list('?scheduled=maybe'), 400);
    expectErrorBody(await list('?context_id=AR-2'), 400);
    expectErrorBody(await list('?context_type='), 400);
    expectErrorBody(await list('?per_page=101'), 400);
    expectErrorBody(await list('?page=0'), 400);
    expectErrorBody(await list(`?q=${'x'.repeat(201)}`), 400);
    expectErrorBody(await list('?from=me'), 400, 'unknown_parameter');
  });

  it("never lists another organization's emails, whatever the filter", async () => {
    for (const query of ['', '?q=Globex', '?status=draft', '?per_page=100']) {
      expect(await uidsOf(query)).not.toContain(foreignDraft);
    }
    expect(await uidsOf('?q=another organization')).toEqual([]);
    // orgB sees its own only.
    expect(await uidsOf('', p.orgB.admin.key)).toEqual([foreignDraft]);
  });

  it('members see the whole list, as admins do (they may read, save and cancel any email by uid)', async () => {
    expect(await uidsOf('', p.orgA.member.key)).toEqual(await uidsOf(''));
    expect(await uidsOf('?status=failed', p.orgA.member.key)).toEqual([d.failed]);
  });

  it('an explicit organization_uid of the caller works; a scoped key with email:read may list', async () => {
    expect((await uidsOf(`?organization_uid=${p.orgA.uid}`)).length).toBe(8);
    const key = await p.keyWithScopes(['email:read']);
    expect((await uidsOf('', key)).length).toBe(8);
  });

  commonRouteChecks(
    'GET /api/email/drafts',
    {
      method: 'GET',
      url: () => '/api/email/drafts',
      scope: 'email:read',
      foreignOrganizationUrl: ({ p }) => `/api/email/drafts?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});
