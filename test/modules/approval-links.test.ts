/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRuns } from '../../src/modules/agents/agents.tables.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import {
  approvalEmailRecipients,
  approvalLinkUses,
} from '../../src/modules/work-tasks/approval-emails.tables.ts';
import { APPROVAL_EMAIL_QUEUE } from '../../src/modules/work-tasks/approval-emails.ts';
import { sendApprovalEmails } from '../../src/modules/work-tasks/approval-emails.service.ts';
import {
  approvalLinkKeys,
  readApprovalLink,
  signApprovalLink,
  type ApprovalLinkClaims,
} from '../../src/modules/work-tasks/approval-links.ts';
import { lookUpApprovalLink } from '../../src/modules/work-tasks/approval-links.service.ts';
import type { MailTransports } from '../../src/platform/mail/mailer.ts';
import { generateSecretKey, parseSecretKey } from '../../src/platform/secrets/secret-box.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { browserFrom, clearSignInThrottle, outboxMessages, setPasswordByEmail } from '../helpers/people.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { until } from '../helpers/until.ts';
import { receivables } from '../helpers/agent-fixtures.ts';

/**
 * Deciding approvals by email (issue 21, point 3; docs/approval-emails.md): who opts in, the email a
 * raise sends (read from DATA_DIR/outbox), the signed single-use links bound to one person, the public
 * routes that look one up and decide with it, and a link racing the API.
 */

let t: TestApp;
let p: Principals;
/** A third person of orgA whose key raises the approvals, so admin and member both get the emails. */
let runner: { userUid: string; key: string; email: string };
let agentUid: string;
let invoiceUid: string;

const PREFS = '/api/me/preferences';

async function optIn(key: string, on = true, organizationUid?: string) {
  const res = await call(t.app, 'PATCH', PREFS, {
    key,
    body: { approval_emails: on, ...(organizationUid ? { organization_uid: organizationUid } : {}) },
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}

async function raise(key = runner.key, title = `Send a reminder ${crypto.randomBytes(3).toString('hex')}`) {
  const res = await call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
    key,
    body: {
      title,
      reasoning: 'AR-77 is 12 days overdue and the client asked for a copy',
      tool_args: {
        type: 'send_email',
        subject: 'Overdue: AR-77',
        body: 'Please pay.',
        recipients: ['ap@client.test'],
        invoice_uid: invoiceUid,
      },
      trigger: { type: 'manual' },
      context_entities: [{ entity_type: 'invoice', entity_uid: invoiceUid }],
    },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as { uid: string; title: string };
}

/** The newest approval email to `to` about `title`, once the job has sent it. */
async function emailAbout(to: string, title: string): Promise<string> {
  return until(
    async () => outboxMessages(t, to).find((m) => m.includes(`Subject: Approval needed: ${title}`)),
    `the approval email to ${to}`,
  );
}

function tokenIn(message: string): string {
  const match = /\/approval\?token=([\w.-]+)/.exec(message);
  if (!match) throw new Error(`no approval link in ${message}`);
  return match[1]!;
}

async function linkFor(to: string, title: string) {
  return tokenIn(await emailAbout(to, title));
}

const lookup = (token: string) => call(t.app, 'POST', '/api/approval-links/lookup', { body: { token } });
const decide = (token: string, action: 'approve' | 'reject', note?: string) =>
  call(t.app, 'POST', '/api/approval-links/decide', {
    body: { token, action, ...(note !== undefined ? { resolution_note: note } : {}) },
  });
const getTask = async (uid: string) =>
  (await call(t.app, 'GET', `/api/work-tasks/${uid}`, { key: p.orgA.admin.key })).body.data;

const testKeys = () => approvalLinkKeys(t.deps.secrets.keys);
function claimsOf(token: string): ApprovalLinkClaims {
  const read = readApprovalLink(token, testKeys());
  if (!read.ok) throw new Error(`not a valid token: ${read.reason}`);
  return read.claims;
}
const runsOf = (taskUid: string) =>
  t.db
    .select()
    .from(agentRuns)
    .where(and(eq(agentRuns.organizationUid, p.orgA.uid), eq(agentRuns.taskUid, taskUid)));

beforeAll(async () => {
  t = await createTestApp({ workers: true, env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const email = `runner-${crypto.randomBytes(3).toString('hex')}@a.test`;
  const added = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
    organizationUid: p.orgA.uid,
    email,
    fullName: 'Runner',
    role: 'member',
  });
  runner = { userUid: added.user_uid, key: added.api_key, email };
  const key = p.orgA.admin.key;
  const agent = await call(t.app, 'POST', '/api/agents', {
    key,
    body: { name: 'Collector', status: 'active' },
  });
  agentUid = agent.body.data.uid;
  const ar = await receivables(t, key);
  const client = await ar.client('Acme Corp');
  invoiceUid = (await ar.invoice(client.uid, { number: 'AR-77', dueInDays: -12 })).uid;
  await optIn(p.orgA.admin.key);
  await optIn(p.orgA.member.key);
  // orgB's admin wants them too, for orgB: none of orgA's approvals may reach them.
  await optIn(p.orgB.admin.key);
});
afterAll(async () => {
  await t?.close();
});

describe('GET and PATCH /api/me/preferences', () => {
  it('off by default; a person turns approval emails on and off for one organization', async () => {
    const other = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgA.uid,
      email: `prefs-${crypto.randomBytes(3).toString('hex')}@a.test`,
      role: 'member',
    });
    const read = await call(t.app, 'GET', PREFS, { key: other.api_key });
    expect(read.status, read.raw).toBe(200);
    expect(read.body.data).toEqual({
      organization_uid: p.orgA.uid,
      organization_name: p.orgA.name,
      approval_emails: false,
    });
    expect(await optIn(other.api_key)).toMatchObject({ approval_emails: true });
    const again = await call(t.app, 'GET', PREFS, {
      key: other.api_key,
      query: { organization_uid: p.orgA.uid },
    });
    expect(again.body.data.approval_emails).toBe(true);
    expect(await optIn(other.api_key, false)).toMatchObject({ approval_emails: false });
  });

  it('one person setting theirs changes nobody else’s', async () => {
    const before = (await call(t.app, 'GET', PREFS, { key: runner.key })).body.data;
    expect(before.approval_emails).toBe(false);
    await optIn(p.orgA.member.key, true);
    expect((await call(t.app, 'GET', PREFS, { key: runner.key })).body.data.approval_emails).toBe(false);
  });

  it('an organization the caller does not belong to is 403, for reading and writing', async () => {
    expectErrorBody(
      await call(t.app, 'GET', PREFS, { key: p.orgA.admin.key, query: { organization_uid: p.orgB.uid } }),
      403,
      'not_a_member',
    );
    expectErrorBody(
      await call(t.app, 'PATCH', PREFS, {
        key: p.orgA.admin.key,
        body: { organization_uid: p.orgB.uid, approval_emails: true },
      }),
      403,
      'not_a_member',
    );
  });

  it('401 without a key or with an unknown one; 422 for a body that is not a boolean or has other fields', async () => {
    expectErrorBody(await call(t.app, 'GET', PREFS), 401, 'unauthorized');
    expectErrorBody(
      await call(t.app, 'PATCH', PREFS, { body: { approval_emails: true } }),
      401,
      'unauthorized',
    );
    expectErrorBody(
      await call(t.app, 'GET', PREFS, { key: `rk_live_${'x'.repeat(38)}` }),
      401,
      'unauthorized',
    );
    expectErrorBody(
      await call(t.app, 'PATCH', PREFS, { key: runner.key, body: { approval_emails: 'yes' } }),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await call(t.app, 'PATCH', PREFS, {
        key: runner.key,
        body: { approval_emails: true, user_uid: p.orgA.admin.userUid },
      }),
      422,
      'validation_failed',
    );
  });

  it('a key needs account:read (a narrow one is refused), and a signed-in person sets it with the session', async () => {
    const scoped = await p.keyWithScopes(['invoices:read'], 'member');
    expectErrorBody(await call(t.app, 'GET', PREFS, { key: scoped }), 403, 'missing_scope');
    const own = await p.keyWithScopes(['account:read'], 'member');
    expect((await call(t.app, 'GET', PREFS, { key: own })).status).toBe(200);
    await setPasswordByEmail(t, p.orgA.member.email, 'a long enough password 42');
    const signedIn = await call(t.app, 'POST', '/api/auth/sign-in', {
      body: { email: p.orgA.member.email, password: 'a long enough password 42' },
    });
    const browser = browserFrom(t, signedIn);
    const set = await browser.call('PATCH', PREFS, { body: { approval_emails: true } });
    expect(set.status, set.raw).toBe(200);
    expect(set.body.data.approval_emails).toBe(true);
  });
});

describe('raising an approval emails the members who opted in', () => {
  it('one email each to the opted-in members, none to the others, none to another organization', async () => {
    const task = await raise();
    const admin = await emailAbout(p.orgA.admin.email, task.title);
    const member = await emailAbout(p.orgA.member.email, task.title);
    for (const message of [admin, member]) {
      expect(message).toContain('Collector asks for approval in Org A:');
      expect(message).toContain('Tool: send_email');
      expect(message).toContain('  recipients: ap@client.test');
      expect(message).toContain(`${t.config.publicBaseUrl}/approval?token=`);
      expect(message).toContain(`${t.config.publicBaseUrl}/app/inbox/${task.uid}`);
    }
    // The admin sees the invoice; the member, to whom it is not assigned, does not (as in their inbox).
    expect(admin).toContain('Invoice AR-77, client Acme Corp: $500.00 due, 12 days overdue');
    expect(member).not.toContain('Invoice AR-77');
    // A link per person: the admin's token names the admin, the member's the member.
    expect(claimsOf(tokenIn(admin))).toMatchObject({ user_uid: p.orgA.admin.userUid, task_uid: task.uid });
    expect(claimsOf(tokenIn(member))).toMatchObject({ user_uid: p.orgA.member.userUid, task_uid: task.uid });
    await until(async () => {
      const rows = await t.db
        .select()
        .from(approvalEmailRecipients)
        .where(eq(approvalEmailRecipients.taskUid, task.uid));
      return rows.length === 2 && rows.every((r) => r.status === 'sent');
    }, 'both recipients marked sent');
    expect(outboxMessages(t, runner.email)).toEqual([]);
    expect(outboxMessages(t, p.orgB.admin.email).filter((m) => m.includes(task.title))).toEqual([]);
  });

  it('the person who raised it gets no email about it', async () => {
    const task = await raise(p.orgA.member.key);
    await emailAbout(p.orgA.admin.email, task.title);
    const rows = await t.db
      .select()
      .from(approvalEmailRecipients)
      .where(eq(approvalEmailRecipients.taskUid, task.uid));
    expect(rows.map((r) => r.userUid)).toEqual([p.orgA.admin.userUid]);
    expect(outboxMessages(t, p.orgA.member.email).filter((m) => m.includes(task.title))).toEqual([]);
  });

  it('under an approval policy only those it lets approve are emailed, and the link ends with the approval', async () => {
    const policy = await call(t.app, 'POST', '/api/approval-policies', {
      key: p.orgA.admin.key,
      body: {
        name: 'Admins only, within the hour',
        agent_uid: agentUid,
        tool_type: 'send_email',
        approver_roles: ['admin'],
        expires_after_minutes: 60,
      },
    });
    expect(policy.status, policy.raw).toBe(201);
    try {
      const task = await raise();
      const admin = await emailAbout(p.orgA.admin.email, task.title);
      const rows = await t.db
        .select()
        .from(approvalEmailRecipients)
        .where(eq(approvalEmailRecipients.taskUid, task.uid));
      expect(rows.map((r) => r.userUid)).toEqual([p.orgA.admin.userUid]);
      expect(outboxMessages(t, p.orgA.member.email).filter((m) => m.includes(task.title))).toEqual([]);
      // Not the 72 hours of APPROVAL_LINK_TTL_H: the approval itself expires within the hour.
      const expiresAt = Date.parse((await getTask(task.uid)).expires_at as string);
      expect(claimsOf(tokenIn(admin)).exp).toBe(Math.floor(expiresAt / 1000));
    } finally {
      await call(t.app, 'DELETE', `/api/approval-policies/${policy.body.data.uid}`, {
        key: p.orgA.admin.key,
      });
    }
  });

  it('a job run again mails nobody twice, and one left mid-send by a crash is not resent', async () => {
    const task = await raise();
    await emailAbout(p.orgA.admin.email, task.title);
    await emailAbout(p.orgA.member.email, task.title);
    const deps = {
      db: t.db,
      config: t.config,
      mail: t.deps.clients.mail,
      secretKeys: t.deps.secrets.keys,
    };
    const data = { organization_uid: p.orgA.uid, task_uid: task.uid };
    expect(await sendApprovalEmails(deps, data, 'retry')).toEqual({ sent: 0, skipped: 0 });
    const count = (to: string) => outboxMessages(t, to).filter((m) => m.includes(task.title)).length;
    expect(count(p.orgA.admin.email)).toBe(1);
    expect(count(p.orgA.member.email)).toBe(1);

    // A recipient a dead worker took (`sending`) stays as it is: at most once.
    const crashed = await raise();
    await emailAbout(p.orgA.admin.email, crashed.title);
    await t.db
      .update(approvalEmailRecipients)
      .set({ status: 'sending' })
      .where(eq(approvalEmailRecipients.taskUid, crashed.uid));
    expect(
      await sendApprovalEmails(deps, { organization_uid: p.orgA.uid, task_uid: crashed.uid }, 'again'),
    ).toEqual({ sent: 0, skipped: 0 });
  });

  it('a refused send is retried for that person alone; an approval decided before it went mails nobody', async () => {
    const task = await raise();
    await emailAbout(p.orgA.admin.email, task.title);
    await emailAbout(p.orgA.member.email, task.title);
    await t.db
      .update(approvalEmailRecipients)
      .set({ status: 'pending' })
      .where(
        and(
          eq(approvalEmailRecipients.taskUid, task.uid),
          eq(approvalEmailRecipients.userUid, p.orgA.member.userUid),
        ),
      );
    const refusing: MailTransports = {
      ...t.deps.clients.mail,
      forSmtpUrl: () => ({
        kind: 'smtp',
        send: () => Promise.reject(new Error('550 mailbox unavailable')),
        wasSent: () => Promise.resolve(undefined),
      }),
    };
    const data = { organization_uid: p.orgA.uid, task_uid: task.uid };
    const deps = { db: t.db, config: t.config, secretKeys: t.deps.secrets.keys };
    await expect(sendApprovalEmails({ ...deps, mail: refusing }, data, 'refused')).rejects.toThrow(
      /not sent to 1 recipient/,
    );
    const [row] = await t.db
      .select()
      .from(approvalEmailRecipients)
      .where(
        and(
          eq(approvalEmailRecipients.taskUid, task.uid),
          eq(approvalEmailRecipients.userUid, p.orgA.member.userUid),
        ),
      );
    expect(row).toMatchObject({ status: 'pending', attempts: 2 });
    expect(row!.lastError).toContain('550 mailbox unavailable');
    const before = outboxMessages(t, p.orgA.member.email).length;
    expect(await sendApprovalEmails({ ...deps, mail: t.deps.clients.mail }, data, 'retry')).toEqual({
      sent: 1,
      skipped: 0,
    });
    expect(outboxMessages(t, p.orgA.member.email)).toHaveLength(before + 1);
    expect(outboxMessages(t, p.orgA.admin.email).filter((m) => m.includes(task.title))).toHaveLength(1);

    // Decided first: the pending recipients are skipped, nobody is mailed.
    await t.db
      .update(approvalEmailRecipients)
      .set({ status: 'pending' })
      .where(eq(approvalEmailRecipients.taskUid, task.uid));
    const decided = await call(t.app, 'PATCH', `/api/work-tasks/${task.uid}`, {
      key: p.orgA.admin.key,
      body: { action: 'approve' },
    });
    expect(decided.status).toBe(200);
    expect(await sendApprovalEmails({ ...deps, mail: t.deps.clients.mail }, data, 'late')).toEqual({
      sent: 0,
      skipped: 2,
    });
  });

  it('the job is declared, and nothing is enqueued when nobody opted in', async () => {
    await optIn(p.orgB.admin.key, false);
    const agent = await call(t.app, 'POST', '/api/agents', {
      key: p.orgB.admin.key,
      body: { name: 'B collector', status: 'active' },
    });
    const res = await call(t.app, 'POST', `/api/agents/${agent.body.data.uid}/approvals`, {
      key: p.orgB.admin.key,
      body: {
        title: 'Nobody wants mail',
        reasoning: '',
        tool_args: { type: 'noop' },
        trigger: { type: 'manual' },
      },
    });
    expect(res.status, res.raw).toBe(201);
    const rows = await t.db
      .select()
      .from(approvalEmailRecipients)
      .where(eq(approvalEmailRecipients.taskUid, res.body.data.uid));
    expect(rows).toEqual([]);
    expect(APPROVAL_EMAIL_QUEUE).toBe('remit.approvals.email');
    await optIn(p.orgB.admin.key, true);
  });
});

describe('POST /api/approval-links/lookup', () => {
  it('shows the request, its invoice as far as the person may see it, and whom the link is for; it decides nothing', async () => {
    const task = await raise();
    const adminToken = await linkFor(p.orgA.admin.email, task.title);
    const memberToken = await linkFor(p.orgA.member.email, task.title);
    for (let i = 0; i < 3; i++) {
      const res = await lookup(adminToken);
      expect(res.status, res.raw).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const { data } = (await lookup(adminToken)).body;
    expect(data.task).toMatchObject({
      uid: task.uid,
      organization_uid: p.orgA.uid,
      organization_name: 'Org A',
      title: task.title,
      status: 'todo',
      agent: { uid: agentUid, name: 'Collector' },
      tool: 'send_email',
      tool_args: { type: 'send_email', subject: 'Overdue: AR-77', recipients: ['ap@client.test'] },
      reasoning: 'AR-77 is 12 days overdue and the client asked for a copy',
      trigger_type: 'manual',
      resolution: null,
      resolved_by: null,
    });
    expect(data.invoices).toEqual([
      expect.objectContaining({
        uid: invoiceUid,
        invoice_number: 'AR-77',
        amount_remaining_cents: 50000,
        currency: 'USD',
        overdue_days: 12,
        counterparty_name: 'Acme Corp',
      }),
    ]);
    expect(data.link).toMatchObject({
      user: { uid: p.orgA.admin.userUid, full_name: 'A Admin', email: p.orgA.admin.email },
      used_at: null,
      used_action: null,
    });
    expect(new Date(data.link.expires_at).getTime()).toBeGreaterThan(Date.now() + 71 * 3_600_000);
    expect(data.warning).toBeNull();
    // The member may not see the invoice (not assigned to them): the page shows none.
    expect((await lookup(memberToken)).body.data.invoices).toEqual([]);

    const stored = await getTask(task.uid);
    expect(stored).toMatchObject({ status: 'todo', resolution: null });
    expect(await t.db.select().from(approvalLinkUses).where(eq(approvalLinkUses.taskUid, task.uid))).toEqual(
      [],
    );
  });

  it('refuses a forged signature, a changed payload, another task’s claims, a foreign key and junk: 400 invalid_token', async () => {
    const task = await raise();
    const other = await raise();
    const token = await linkFor(p.orgA.member.email, task.title);
    const [payload, signature] = token.split('.') as [string, string];
    const claims = claimsOf(token);
    const encode = (c: object) => Buffer.from(JSON.stringify(c)).toString('base64url');
    const foreignKey = approvalLinkKeys([parseSecretKey(generateSecretKey(), 'foreign')])[0]!;
    for (const bad of [
      `${payload}.${(signature[0] === 'A' ? 'B' : 'A') + signature.slice(1)}`,
      `${encode({ ...claims, user_uid: p.orgA.admin.userUid })}.${signature}`,
      `${encode({ ...claims, task_uid: other.uid })}.${signature}`,
      `${encode({ ...claims, exp: claims.exp + 86_400 })}.${signature}`,
      signApprovalLink({ ...claims, task_uid: other.uid }, foreignKey),
      'not-a-token',
    ]) {
      expectErrorBody(await lookup(bad), 400, 'invalid_token');
      expectErrorBody(await decide(bad, 'approve'), 400, 'invalid_token');
    }
    expect((await getTask(other.uid)).resolution).toBeNull();
    expectErrorBody(
      await call(t.app, 'POST', '/api/approval-links/lookup', { body: { token: 'a b' } }),
      422,
      'validation_failed',
    );
  });

  it('410 token_expired once the link is past its expiry (signed by Remit, but old)', async () => {
    const task = await raise();
    const claims = claimsOf(await linkFor(p.orgA.member.email, task.title));
    const expired = signApprovalLink(
      { ...claims, jti: crypto.randomUUID(), exp: Math.floor(Date.now() / 1000) - 1 },
      testKeys()[0]!,
    );
    expectErrorBody(await lookup(expired), 410, 'token_expired');
    expectErrorBody(await decide(expired, 'approve'), 410, 'token_expired');
    expect((await getTask(task.uid)).resolution).toBeNull();
  });

  it('a link signed under an earlier SECRET_KEY still works while that key is SECRET_KEY_PREVIOUS', async () => {
    const task = await raise();
    const token = await linkFor(p.orgA.member.email, task.title);
    const rotated = [parseSecretKey(generateSecretKey(), 'new SECRET_KEY'), ...t.deps.secrets.keys];
    const deps = { db: t.db, jobs: t.deps.jobs };
    const caller = { ip: '192.0.2.7', requestId: 'rotation', clientAddress: '192.0.2.7' };
    const view = await lookUpApprovalLink({ ...deps, secretKeys: rotated }, token, caller);
    expect(view.task.uid).toBe(task.uid);
    await expect(
      lookUpApprovalLink({ ...deps, secretKeys: rotated.slice(0, 1) }, token, caller),
    ).rejects.toMatchObject({ code: 'invalid_token' });
  });

  it('a removed member’s link no longer works', async () => {
    const leaver = await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgA.uid,
      email: `leaver-${crypto.randomBytes(3).toString('hex')}@a.test`,
      fullName: 'Leaver',
      role: 'member',
    });
    await optIn(leaver.api_key);
    const task = await raise();
    const message = await until(async () => {
      const rows = await t.db
        .select()
        .from(approvalEmailRecipients)
        .where(
          and(
            eq(approvalEmailRecipients.taskUid, task.uid),
            eq(approvalEmailRecipients.userUid, leaver.user_uid),
          ),
        );
      return rows[0]?.status === 'sent' ? rows[0] : undefined;
    }, 'the leaver’s email');
    expect(message).toBeDefined();
    const me = await call(t.app, 'GET', '/api/me', { key: leaver.api_key });
    const token = await linkFor(me.body.data.user.email, task.title);
    expect((await lookup(token)).status).toBe(200);
    const removed = await call(
      t.app,
      'DELETE',
      `/api/organization/${p.orgA.uid}/members/${leaver.user_uid}`,
      {
        key: p.orgA.admin.key,
      },
    );
    expect(removed.status, removed.raw).toBe(200);
    expectErrorBody(await lookup(token), 403, 'forbidden');
    expectErrorBody(await decide(token, 'approve'), 403, 'forbidden');
    expect((await getTask(task.uid)).resolution).toBeNull();
  });
});

describe('POST /api/approval-links/decide', () => {
  it('approves as the link’s person, like the API: resolved_by, change log, audit, the follow-up run', async () => {
    const task = await raise();
    const token = await linkFor(p.orgA.member.email, task.title);
    const res = await decide(token, 'approve', 'Fine by me');
    expect(res.status, res.raw).toBe(200);
    expect(res.body.message).toBe('Approved');
    expect(res.body.data.task).toMatchObject({
      status: 'done',
      resolution: 'approved',
      resolved_by: { user_uid: p.orgA.member.userUid, user_name: 'A Member' },
      resolution_note: 'Fine by me',
    });
    expect(res.body.data.link).toMatchObject({ used_action: 'approve' });
    expect(res.body.data.link.used_at).toEqual(expect.any(String));

    const stored = await getTask(task.uid);
    expect(stored.resolved_by.user_uid).toBe(p.orgA.member.userUid);
    expect(stored.change_log.at(-1)).toMatchObject({
      action: 'resolved',
      by_type: 'user',
      by_name: 'A Member',
      details: { action: 'approve', resolution: 'approved', resolution_note: 'Fine by me' },
    });
    const runs = await runsOf(task.uid);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ triggerType: 'approval', requestedByUid: p.orgA.member.userUid });
    const audit = await call(t.app, 'GET', `/api/organization/${p.orgA.uid}/audit-events`, {
      key: p.orgA.admin.key,
      query: { entity_uid: task.uid },
    });
    expect(audit.status, audit.raw).toBe(200);
    const decision = audit.body.data.items.find((e: any) => e.action === 'task.decided');
    expect(decision).toMatchObject({ actor_type: 'user', actor_uid: p.orgA.member.userUid });
  });

  it('a link works once: used again → 409 token_used; looked up → it says it was used', async () => {
    const task = await raise();
    const token = await linkFor(p.orgA.admin.email, task.title);
    expect((await decide(token, 'reject', 'Client already paid')).status).toBe(200);
    const again = await decide(token, 'approve');
    expectErrorBody(again, 409, 'token_used');
    expect(again.body.message).toContain('already used');
    const looked = await lookup(token);
    expect(looked.status).toBe(200);
    expect(looked.body.data.link.used_action).toBe('reject');
    expect(looked.body.data.task).toMatchObject({ status: 'canceled', resolution: 'rejected' });
    // The agent hears of the rejection (one follow-up run, carrying it); nothing is approved.
    const runs = await runsOf(task.uid);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.input).toMatchObject({ decision: { action: 'reject', note: 'Client already paid' } });
  });

  it('a rejection without a reason works, as in the API (the reason is optional); the link is spent', async () => {
    for (const note of [undefined, '   ']) {
      const task = await raise();
      const token = await linkFor(p.orgA.member.email, task.title);
      const res = await decide(token, 'reject', note);
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data.task).toMatchObject({ resolution: 'rejected', resolution_note: null });
      expect(res.body.data.link.used_action).toBe('reject');
      expectErrorBody(await decide(token, 'reject', 'Again'), 409, 'token_used');
    }
  });

  it('an approval someone else decided first: 409 already_resolved naming who; the link stays unused', async () => {
    const task = await raise();
    const token = await linkFor(p.orgA.member.email, task.title);
    const api = await call(t.app, 'PATCH', `/api/work-tasks/${task.uid}`, {
      key: p.orgA.admin.key,
      body: { action: 'reject', resolution_note: 'No' },
    });
    expect(api.status).toBe(200);
    const res = await decide(token, 'approve');
    expectErrorBody(res, 409, 'already_resolved');
    expect(res.body.message).toContain('rejected by A Admin');
    const looked = (await lookup(token)).body.data;
    expect(looked.link.used_at).toBeNull();
    expect(looked.task.resolved_by).toEqual({ user_uid: p.orgA.admin.userUid, user_name: 'A Admin' });
  });

  it('the page showed amount 1500, the agent revised it to 15000: Approve with the shown revision decides nothing (409 approval_changed); the link stays unused', async () => {
    const res = await call(t.app, 'POST', `/api/agents/${agentUid}/approvals`, {
      key: runner.key,
      body: {
        title: `Pay ACME ${crypto.randomBytes(3).toString('hex')}`,
        reasoning: 'Due today',
        tool_args: { type: 'send_payment', payee: 'ACME Corp', amount_cents: 1500 },
        trigger: { type: 'manual' },
      },
    });
    expect(res.status, res.raw).toBe(201);
    const task = res.body.data as { uid: string; title: string };
    const token = await linkFor(p.orgA.member.email, task.title);
    const shown = (await lookup(token)).body.data.task;
    expect(shown).toMatchObject({ tool_args: { amount_cents: 1500 }, args_revision: 1 });
    const revised = await call(t.app, 'PATCH', `/api/agents/${agentUid}/approvals/${task.uid}`, {
      key: runner.key,
      body: { tool_args: { amount_cents: 15_000 }, summary: 'Pay the late fee too' },
    });
    expect(revised.status, revised.raw).toBe(200);

    const stale = await call(t.app, 'POST', '/api/approval-links/decide', {
      body: { token, action: 'approve', args_revision: shown.args_revision },
    });
    expectErrorBody(stale, 409, 'approval_changed');
    expect(stale.body.message).toMatch(
      /^This approval changed after you saw it: the agent Collector revised amount_cents at /,
    );
    expect(stale.body.details).toMatchObject({ args_revision: 2, changed: ['amount_cents'] });
    const now = (await lookup(token)).body.data;
    expect(now.link.used_at).toBeNull();
    expect(now.task).toMatchObject({
      resolution: null,
      args_revision: 2,
      tool_args: { amount_cents: 15_000 },
    });

    const decided = await call(t.app, 'POST', '/api/approval-links/decide', {
      body: { token, action: 'approve', args_revision: 2 },
    });
    expect(decided.status, decided.raw).toBe(200);
    expect(decided.body.data.task).toMatchObject({
      resolution: 'approved',
      tool_args: { amount_cents: 15_000 },
    });
  });

  it('an unknown body field or action is 422; no Idempotency-Key is kept (public, like the sign-in links)', async () => {
    const task = await raise();
    const token = await linkFor(p.orgA.member.email, task.title);
    expectErrorBody(
      await call(t.app, 'POST', '/api/approval-links/decide', {
        body: { token, action: 'approve', tool_args: {} },
      }),
      422,
      'validation_failed',
    );
    expectErrorBody(
      await call(t.app, 'POST', '/api/approval-links/decide', { body: { token, action: 'maybe' } }),
      422,
      'validation_failed',
    );
    const first = await call(t.app, 'POST', '/api/approval-links/decide', {
      body: { token, action: 'approve' },
      headers: { 'idempotency-key': 'link-1' },
    });
    expect(first.status).toBe(200);
    const second = await call(t.app, 'POST', '/api/approval-links/decide', {
      body: { token, action: 'approve' },
      headers: { 'idempotency-key': 'link-1' },
    });
    expectErrorBody(second, 409, 'token_used');
  });
});

describe('races', () => {
  it('the same approval decided by link and by the API at once: exactly one wins, the other is told who', async () => {
    for (let round = 0; round < 3; round++) {
      const task = await raise();
      const token = await linkFor(p.orgA.member.email, task.title);
      const [byLink, byApi] = await Promise.all([
        decide(token, 'approve'),
        call(t.app, 'PATCH', `/api/work-tasks/${task.uid}`, {
          key: p.orgA.admin.key,
          body: { action: 'reject', resolution_note: 'Race' },
        }),
      ]);
      expect([byLink.status, byApi.status].sort()).toEqual([200, 409]);
      const loser = byLink.status === 409 ? byLink : byApi;
      expectErrorBody(loser, 409, 'already_resolved');
      const stored = await getTask(task.uid);
      expect(stored.change_log.filter((c: any) => c.action === 'resolved')).toHaveLength(1);
      expect(stored.resolved_by.user_uid).toBe(
        byLink.status === 200 ? p.orgA.member.userUid : p.orgA.admin.userUid,
      );
      if (byLink.status === 409) expect(byLink.body.message).toContain('by A Admin');
      // One run, carrying the decision that won (a rejection's tells the agent).
      expect((await runsOf(task.uid)).map((r) => (r.input as any).decision.action)).toEqual([
        stored.resolution === 'approved' ? 'approve' : 'reject',
      ]);
      const uses = await t.db.select().from(approvalLinkUses).where(eq(approvalLinkUses.taskUid, task.uid));
      expect(uses).toHaveLength(byLink.status === 200 ? 1 : 0);
    }
  });

  it('two links (two people) and one link used twice at once: one decision, one use', async () => {
    for (let round = 0; round < 3; round++) {
      const task = await raise();
      const member = await linkFor(p.orgA.member.email, task.title);
      const admin = await linkFor(p.orgA.admin.email, task.title);
      const results = await Promise.all([
        decide(member, 'approve'),
        decide(member, 'approve'),
        decide(admin, 'reject', 'No'),
      ]);
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      for (const r of results.filter((r) => r.status !== 200)) {
        expect([409], r.raw).toContain(r.status);
        expect(['already_resolved', 'token_used']).toContain(r.body.code);
      }
      const uses = await t.db.select().from(approvalLinkUses).where(eq(approvalLinkUses.taskUid, task.uid));
      expect(uses).toHaveLength(1);
      expect((await getTask(task.uid)).change_log.filter((c: any) => c.action === 'resolved')).toHaveLength(
        1,
      );
    }
  });
});

describe('throttling', () => {
  it('a run of invalid tokens from one address is slowed down with 429 and Retry-After, as sign-in links are', async () => {
    let last;
    for (let i = 0; i < 30; i++) {
      last = await lookup(`junk.${'A'.repeat(43)}`);
      if (last.status === 429) break;
    }
    expectErrorBody(last!, 429, 'rate_limited');
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    // Unblocked for the tests that sign in after this one.
    await clearSignInThrottle(t);
  });
});
