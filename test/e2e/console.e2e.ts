import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { emailedTokenIn, totpCode } from '../helpers/people.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';
import {
  ADA,
  checkPage as checkPageOnce,
  daysAgo,
  DESKTOP,
  newContext as newBrowserContext,
  PHONE,
  startConsoleRun,
} from './harness.ts';

/**
 * The console in a real browser (docs/console.md): Debian's Chromium driven by playwright-core against
 * a Remit process on the embedded database, started here. The steps build on each other (one
 * organization, its people and their approvals), so they run in order. Each page is checked with
 * axe-core (no serious or critical violation) and for Content-Security-Policy violations, and
 * photographed into docs/console/.
 */

const GRACE = { name: 'Grace Hopper', email: 'grace@acme.test', password: 'compile the nanoseconds' };

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let organizationUid: string;
let ada: BrowserContext;
let adaPage: Page;
let grace: BrowserContext;
let gracePage: Page;
let agentUid: string;
let invoiceUid: string;
/** Pages checked with axe-core, named. */
const checked: string[] = [];

const newContext = (viewport = DESKTOP, storageState?: Awaited<ReturnType<BrowserContext['storageState']>>) =>
  newBrowserContext(browser, viewport, storageState);

/** The harness's check of a page, remembered by name. */
async function checkPage(page: Page, name: string, options: { fullPage?: boolean } = {}) {
  await checkPageOnce(page, name, options);
  checked.push(name);
}

/** The newest link to `pathname` emailed to `to`, once the server has written it to its outbox. */
function emailedToken(to: string, pathname: string, after: string[] = []): Promise<string> {
  return until(() => {
    try {
      const token = emailedTokenIn(database.dataDir, to, pathname);
      return Promise.resolve(after.includes(token) ? undefined : token);
    } catch {
      return Promise.resolve(undefined);
    }
  }, `a ${pathname} link emailed to ${to}`);
}

async function signIn(page: Page, person: { email: string; password: string }) {
  await page.getByLabel('Email').fill(person.email);
  await page.getByLabel('Password', { exact: true }).fill(person.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

let approvals = 0;
/** An approval raised by the agent through the API, as an outside runtime would. */
async function raiseApproval(title: string, subject = `Invoice AR-1042 is overdue (${++approvals})`) {
  const { data } = await api.POST('/api/agents/{agent_uid}/approvals', {
    params: { path: { agent_uid: agentUid } },
    body: {
      title,
      reasoning:
        'AR-1042 is 40 days overdue with €1,234.50 outstanding; the client has not answered the invoice.',
      tool_args: {
        type: 'send_email',
        subject,
        body: 'Dear Hank,\n\nInvoice AR-1042 (€1,234.50) is 40 days past due. When can we expect payment?\n\nAcme Collections',
        recipients: ['ap@globex.test'],
        invoice_uid: invoiceUid,
      },
      trigger: { type: 'schedule' },
      priority: 'high',
      context_entities: [{ entity_type: 'invoice', entity_uid: invoiceUid }],
    },
  });
  return data;
}

async function getTask(uid: string) {
  return (await api.GET('/api/work-tasks/{task_uid}', { params: { path: { task_uid: uid } } })).data;
}

async function runsOf(taskUid: string) {
  const { data } = await api.GET('/api/agents/{agent_uid}/activities', {
    params: { path: { agent_uid: agentUid }, query: { per_page: 100 } },
  });
  return data.items.filter((run) => run.attributes.task_uid === taskUid);
}

/** Holds the page's polls of the pending list until `release()`: the page acts on what it shows. */
async function holdPolls(page: Page) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const matcher = (url: URL) => url.pathname === '/api/work-tasks';
  await page.route(matcher, async (route) => {
    await gate;
    await route.continue();
  });
  return async () => {
    release();
    // Lets the held polls go on before the route goes.
    await page.unrouteAll({ behavior: 'wait' });
  };
}

describe('the console in a browser', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    ({ database, server, browser, api, organizationUid } = await startConsoleRun('remit-e2e-'));

    // What the collections agent's reminders are about: an overdue receivable of a client, and the
    // account the approved reminder is sent from.
    await api.POST('/api/email/accounts', {
      body: { email: 'ar@acme.test', display_name: 'Acme Receivables' },
    });
    const client = await api.POST('/api/parties', {
      body: {
        name: 'Globex Corporation',
        role: 'client',
        billing_contact: { name: 'Hank Scorpio', email: 'ap@globex.test' },
      },
    });
    await api.POST('/api/products', {
      body: {
        sku: 'CONSULT',
        name: 'Consulting day',
        context_type: 'PRODUCT',
        unit_price: 41_150,
        currency: 'EUR',
      },
    });
    const invoice = await api.POST('/api/invoices', {
      body: {
        invoice_type: 'ACCOUNTS_RECEIVABLE',
        invoice_number: 'AR-1042',
        status: 'open',
        currency: 'EUR',
        issue_date: daysAgo(70),
        due_date: daysAgo(40),
        client_party_uid: client.data.uid,
        line_items: [{ context_type: 'PRODUCT', sku: 'CONSULT', quantity: 3 }],
      },
    });
    invoiceUid = invoice.data.uid;
    const agent = await api.POST('/api/agents', {
      body: {
        name: 'Collector',
        agent_type: 'collections',
        status: 'active',
        triggers: [{ type: 'manual' }],
      },
    });
    agentUid = agent.data.uid;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    server?.child.kill('SIGTERM');
    if (server) await server.exited;
    await database?.drop();
  });

  it('a first password through the emailed reset link, then sign in', async () => {
    ada = await newContext();
    adaPage = await ada.newPage();
    await adaPage.goto(`${server.url}/app/`);
    // Signed out: the console sends the person to sign in.
    await adaPage.waitForURL(`${server.url}/app/sign-in`);
    await expect.poll(() => adaPage.title()).toBe('Sign in · Remit');
    await checkPage(adaPage, 'sign-in');

    await adaPage.getByRole('link', { name: 'Forgot your password?' }).click();
    await adaPage.getByLabel('Email').fill(ADA.email);
    await checkPage(adaPage, 'forgot-password');
    await adaPage.getByRole('button', { name: 'Email me a link' }).click();
    await adaPage.getByText(/a link to set a new password is on its way/).waitFor();

    // The link as emailed (PUBLIC_BASE_URL/reset-password?token=…) opens the console's page, and the
    // token leaves the address bar.
    const token = await emailedToken(ADA.email, '/reset-password');
    await adaPage.goto(`${server.url}/reset-password?token=${token}`);
    await adaPage.getByRole('heading', { name: 'Set a new password' }).waitFor();
    expect(adaPage.url()).toBe(`${server.url}/app/reset-password`);
    await adaPage.getByLabel('New password').fill(ADA.password);
    await adaPage.getByLabel('Repeat the password').fill(ADA.password);
    await checkPage(adaPage, 'reset-password');
    await adaPage.getByRole('button', { name: 'Set password' }).click();
    await adaPage.getByText('Your password is set. Sign in with it.').waitFor();

    await signIn(adaPage, ADA);
    await adaPage.waitForURL(`${server.url}/app/inbox`);
    await adaPage.getByText('No approvals waiting').waitFor();
    await expect.poll(() => adaPage.getByTestId('pending-count').textContent()).toContain('0');
    await adaPage.getByRole('banner').getByText('Acme Collections', { exact: true }).waitFor();
    await checkPage(adaPage, 'inbox-empty');
  });

  it('invite → accept → sign in, with the second factor the API asks for', async () => {
    await api.POST('/api/organization/{organization_uid}/invitations', {
      params: { path: { organization_uid: organizationUid } },
      body: { email: GRACE.email, role: 'member' },
    });
    const token = await emailedToken(GRACE.email, '/accept-invitation');
    grace = await newContext();
    gracePage = await grace.newPage();
    await gracePage.goto(`${server.url}/accept-invitation?token=${token}`);
    await gracePage.getByRole('heading', { name: 'Join Acme Collections' }).waitFor();
    expect(gracePage.url()).toBe(`${server.url}/app/accept-invitation`);
    await gracePage.getByText(`${ADA.name} invited you`).waitFor();
    await gracePage.getByLabel('Your name').fill(GRACE.name);
    await gracePage.getByLabel('New password').fill(GRACE.password);
    await gracePage.getByLabel('Repeat the password').fill(GRACE.password);
    await checkPage(gracePage, 'accept-invitation');
    await gracePage.getByRole('button', { name: 'Create account and join' }).click();

    await gracePage.getByText('You joined Acme Collections. Sign in to start.').waitFor();
    expect(await gracePage.getByLabel('Email').inputValue()).toBe(GRACE.email);
    await gracePage.getByLabel('Password', { exact: true }).fill(GRACE.password);
    await gracePage.getByRole('button', { name: 'Sign in' }).click();
    await gracePage.waitForURL(`${server.url}/app/inbox`);
    await gracePage.getByRole('button', { name: /^Account/ }).click();
    await gracePage.getByText('Member of Acme Collections').waitFor();

    // Grace turns on a second factor (through the API, with her session), signs out and in again.
    const session = await grace.request.get(`${server.url}/api/auth/session`);
    const csrf = ((await session.json()) as { data: { csrf_token: string } }).data.csrf_token;
    const headers = { 'x-csrf-token': csrf, 'content-type': 'application/json' };
    const setup = await grace.request.post(`${server.url}/api/auth/totp/setup`, { headers, data: {} });
    expect(setup.status(), await setup.text()).toBe(200);
    const secret = ((await setup.json()) as { data: { secret: string } }).data.secret;
    const enabled = await grace.request.post(`${server.url}/api/auth/totp/enable`, {
      headers,
      data: { code: totpCode(secret) },
    });
    expect(enabled.status(), await enabled.text()).toBe(200);

    await gracePage.getByRole('button', { name: 'Sign out' }).click();
    await gracePage.getByText('You have signed out.').waitFor();
    await signIn(gracePage, GRACE);
    await gracePage.getByText('Enter the six-digit code from your authenticator app.').waitFor();
    await expect.poll(() => gracePage.evaluate(() => document.activeElement?.id)).toBe('totp');
    await checkPage(gracePage, 'sign-in-second-factor');
    // The next period's code: the one just used to turn the factor on is spent.
    await gracePage.getByLabel('Authentication code').fill(totpCode(secret, 1));
    await gracePage.getByRole('button', { name: 'Sign in' }).click();
    await gracePage.waitForURL(`${server.url}/app/inbox`);
    await gracePage.getByText('No approvals waiting').waitFor();
  });

  it('an agent asks through the API; Ada edits the subject and approves; the follow-up run sends the edited email', async () => {
    const task = await raiseApproval(
      'Send payment reminder for invoice AR-1042',
      'Invoice AR-1042 is overdue',
    );
    // The inbox polls: the approval shows up without a reload, with the count.
    await adaPage.getByRole('link', { name: /Send payment reminder for invoice AR-1042/ }).click();
    await expect.poll(() => adaPage.getByTestId('pending-count').textContent()).toContain('1');
    await adaPage.getByRole('heading', { name: 'Send payment reminder for invoice AR-1042' }).waitFor();
    const detail = adaPage.getByRole('article');
    await detail.getByText('Collector').first().waitFor();
    await detail.getByText('send_email').first().waitFor();
    // The context: the invoice's amount due in its currency, days overdue, the client.
    await detail.getByText('€1,234.50').first().waitFor();
    await detail.getByText('40 days', { exact: true }).waitFor();
    await detail.getByText('Globex Corporation').waitFor();
    await detail.getByText(/Any member of Acme Collections can approve or reject this/).waitFor();
    await checkPage(adaPage, 'approval', { fullPage: true });

    await adaPage.getByRole('button', { name: 'Edit and approve' }).click();
    const subject = adaPage.getByLabel('subject', { exact: true });
    await subject.fill('Second reminder: invoice AR-1042 is 40 days overdue');
    await adaPage
      .getByRole('list', { name: 'Changes against the proposal' })
      .getByText('Second reminder')
      .waitFor();
    await checkPage(adaPage, 'approval-edit', { fullPage: true });
    await adaPage.getByRole('button', { name: /^Approve with edits/ }).click();
    await adaPage.getByText('Approved “Send payment reminder for invoice AR-1042”.').waitFor();
    await adaPage.getByText('No approvals waiting').waitFor();

    const approved = await getTask(task.uid);
    expect(approved).toMatchObject({
      status: 'done',
      resolution: 'approved',
      resolved_by: { user_name: ADA.name },
      tool_args: {
        subject: 'Second reminder: invoice AR-1042 is 40 days overdue',
        recipients: ['ap@globex.test'],
      },
    });
    expect(approved.change_log.at(-1)?.details).toMatchObject({ edited_tool_args: ['subject'] });

    // The follow-up run acts on the edited arguments: the email it sent has the new subject.
    const run = await until(async () => {
      const [found] = await runsOf(task.uid);
      return found && ['completed', 'failed'].includes(found.attributes.status ?? '') ? found : undefined;
    }, 'the follow-up run to end');
    expect(run.attributes, JSON.stringify(run.attributes)).toMatchObject({
      status: 'completed',
      trigger_type: 'approval',
    });
    const outcome = run.attributes.outcome as { sent: boolean; draft_uid: string };
    expect(outcome.sent).toBe(true);
    const draft = await api.GET('/api/email/drafts/{uid}', { params: { path: { uid: outcome.draft_uid } } });
    expect(draft).toMatchObject({ subject: 'Second reminder: invoice AR-1042 is 40 days overdue' });
  });

  it('reject with a reason', async () => {
    const task = await raiseApproval('Send a final notice for invoice AR-1042');
    await adaPage.getByRole('link', { name: /Send a final notice/ }).click();
    await adaPage.getByRole('heading', { name: 'Send a final notice for invoice AR-1042' }).waitFor();
    // Without a reason the page asks for one, and puts the cursor there.
    await adaPage.getByRole('button', { name: 'Reject' }).click();
    await adaPage.getByText('Give a reason').waitFor();
    await expect.poll(() => adaPage.evaluate(() => document.activeElement?.tagName)).toBe('TEXTAREA');
    await adaPage.getByLabel('Reason').fill('Hank promised payment by Friday on the phone.');
    await adaPage.getByRole('button', { name: 'Reject' }).click();
    await adaPage.getByText('Rejected “Send a final notice for invoice AR-1042”.').waitFor();

    expect(await getTask(task.uid)).toMatchObject({
      status: 'canceled',
      resolution: 'rejected',
      resolution_note: 'Hank promised payment by Friday on the phone.',
      resolved_by: { user_name: ADA.name },
    });
    // The agent hears of it: its follow-up run records the rejection and sends nothing.
    const run = await until(async () => {
      const [found] = await runsOf(task.uid);
      return found && found.attributes.status === 'completed' ? found : undefined;
    }, 'the rejection’s follow-up run');
    expect(run.attributes.outcome).toMatchObject({ sent: false, rejected: true });
  });

  it('respond with feedback: the agent revises its draft and asks again; the revision is approved', async () => {
    const task = await raiseApproval('Send a reminder to Globex (respond)');
    await adaPage.goto(`${server.url}/app/inbox/${task.uid}`);
    await adaPage.getByRole('heading', { name: 'Send a reminder to Globex (respond)' }).waitFor();
    // Without feedback the page asks for it, and puts the cursor there.
    await adaPage.getByRole('button', { name: 'Respond' }).click();
    await adaPage.getByText('Write what the agent should change').waitFor();
    await expect.poll(() => adaPage.evaluate(() => document.activeElement?.id ?? '')).toMatch(/-feedback$/);
    const feedback = 'We can offer Globex a payment plan over three months.';
    await adaPage.getByLabel('Feedback to the agent').fill(feedback);
    await adaPage.getByRole('button', { name: 'Respond' }).click();
    await adaPage.getByText('Feedback sent. Collector will revise the request').waitFor();
    // Still pending, in the list, and nothing was decided.
    await adaPage.getByRole('link', { name: /Send a reminder to Globex \(respond\)/ }).waitFor();

    // The collections agent's follow-up run adds the feedback to the draft (no language model here).
    const revised = await until(async () => {
      const current = await getTask(task.uid);
      return current.change_log.some((entry) => entry.action === 'revised') ? current : undefined;
    }, 'the revision');
    expect(revised).toMatchObject({ status: 'todo', resolution: null, response: null });
    expect(revised.tool_args?.body).toContain(feedback);
    // The page's poll brings the revised draft: the feedback now in the proposed body.
    const detail = adaPage.getByRole('article');
    await expect
      .poll(() => detail.getByRole('definition').allTextContents(), { timeout: 15_000 })
      .toContainEqual(expect.stringContaining(feedback));
    await checkPage(adaPage, 'approval-revised', { fullPage: true });

    await adaPage.getByRole('button', { name: 'Approve', exact: true }).click();
    await adaPage.getByText('Approved “Send a reminder to Globex (respond)”.').waitFor();
    const sent = await until(async () => {
      return (await runsOf(task.uid)).find(
        (run) =>
          run.attributes.status === 'completed' &&
          (run.attributes.outcome as { sent?: boolean } | null)?.sent === true,
      );
    }, 'the approved revision to be sent');
    const draft = await api.GET('/api/email/drafts/{uid}', {
      params: { path: { uid: (sent.attributes.outcome as { draft_uid: string }).draft_uid } },
    });
    expect(draft.body_text).toContain(feedback);
  });

  it('two people decide the same approval at once: one wins, the other tab says who', async () => {
    const task = await raiseApproval('Send payment reminder to Globex (call notes attached)');
    // A third tab watches the list: the approval leaves it saying who decided.
    const watcher = await ada.newPage();
    await watcher.goto(`${server.url}/app/inbox`);
    await watcher.getByRole('link', { name: /call notes attached/ }).waitFor();

    await adaPage.goto(`${server.url}/app/inbox/${task.uid}`);
    await gracePage.goto(`${server.url}/app/inbox/${task.uid}`);
    for (const page of [adaPage, gracePage])
      await page.getByRole('button', { name: 'Approve', exact: true }).waitFor();
    // Both pages act on what they show: their polls are held so neither learns of the other's decision first.
    const releases = await Promise.all([holdPolls(adaPage), holdPolls(gracePage)]);
    await Promise.all([
      adaPage.getByRole('button', { name: 'Approve', exact: true }).click(),
      gracePage.getByRole('button', { name: 'Approve', exact: true }).click(),
    ]);
    const decided = await until(async () => {
      const current = await getTask(task.uid);
      return current.resolution ? current : undefined;
    }, 'the approval to be decided');
    const winner = decided.resolved_by?.user_name;
    expect([ADA.name, GRACE.name]).toContain(winner);
    const [winnerPage, loserPage] = winner === ADA.name ? [adaPage, gracePage] : [gracePage, adaPage];
    await winnerPage.getByText('Approved “Send payment reminder to Globex (call notes attached)”.').waitFor();
    await loserPage.getByText('Your decision was not recorded').waitFor();
    await loserPage.getByRole('article').getByText(`Approved by ${winner}`).waitFor();
    await checkPage(loserPage, 'approval-conflict');
    for (const release of releases) await release();

    await watcher.getByText(`— approved by ${winner}`).waitFor();
    await checkPage(watcher, 'inbox-decided-elsewhere');
    await watcher.close();
    // One decision, one follow-up run.
    expect(decided.change_log.filter((entry) => entry.action === 'resolved')).toHaveLength(1);
    expect(
      await until(
        async () => ((await runsOf(task.uid)).length > 0 ? runsOf(task.uid) : undefined),
        'the run',
      ),
    ).toHaveLength(1);
  });

  it('the agent revises the request while Ada reads it: Approve decides nothing and says what changed; the next click approves the revision', async () => {
    const task = await raiseApproval('Send a reminder to Globex (revised while read)');
    await adaPage.goto(`${server.url}/app/inbox/${task.uid}`);
    await adaPage.getByRole('button', { name: 'Approve', exact: true }).waitFor();
    // The page's polls are held: it still shows the request as Ada read it.
    const release = await holdPolls(adaPage);
    await api.PATCH('/api/agents/{agent_uid}/approvals/{task_uid}', {
      params: { path: { agent_uid: agentUid, task_uid: task.uid } },
      body: { tool_args: { subject: 'Final notice: invoice AR-1042' }, summary: 'A firmer subject' },
    });
    await adaPage.getByRole('button', { name: 'Approve', exact: true }).click();
    await adaPage
      .getByRole('alert')
      .getByText(/^This approval changed after you saw it: the agent Collector revised subject at .* UTC\./)
      .waitFor();
    await adaPage.getByRole('article').getByText('Final notice: invoice AR-1042').waitFor();
    expect((await getTask(task.uid)).resolution).toBeNull();
    await release();

    await adaPage.getByRole('button', { name: 'Approve', exact: true }).click();
    await adaPage.getByText('Approved “Send a reminder to Globex (revised while read)”.').waitFor();
    expect(await getTask(task.uid)).toMatchObject({
      resolution: 'approved',
      tool_args: { subject: 'Final notice: invoice AR-1042' },
    });
  });

  it('keyboard only: j selects, r goes to the reason, a approves', async () => {
    const task = await raiseApproval('Send payment reminder (keyboard)');
    await adaPage.goto(`${server.url}/app/inbox`);
    await adaPage.getByRole('link', { name: /Send payment reminder \(keyboard\)/ }).waitFor();
    await adaPage.keyboard.press('Tab');
    expect(await adaPage.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await adaPage.keyboard.press('j');
    await adaPage.waitForURL(`${server.url}/app/inbox/${task.uid}`);
    await adaPage.getByRole('heading', { name: 'Send payment reminder (keyboard)' }).waitFor();
    await adaPage.keyboard.press('r');
    await expect.poll(() => adaPage.evaluate(() => document.activeElement?.tagName)).toBe('TEXTAREA');
    await adaPage.keyboard.press('Escape');
    await adaPage.keyboard.press('a');
    await adaPage.getByText('Approved “Send payment reminder (keyboard)”.').waitFor();
    expect(await getTask(task.uid)).toMatchObject({
      resolution: 'approved',
      resolved_by: { user_name: ADA.name },
    });
  });

  it('at 375 px, and the first load under 250 KB of compressed JavaScript', async () => {
    const task = await raiseApproval('Send payment reminder (phone)');
    const phone = await newContext(PHONE, await ada.storageState());
    const page = await phone.newPage();
    const scripts: Promise<number>[] = [];
    page.on('response', (response) => {
      if (response.request().resourceType() === 'script') {
        scripts.push(
          response
            .request()
            .sizes()
            .then((sizes) => sizes.responseBodySize),
        );
      }
    });
    await page.goto(`${server.url}/app/inbox`);
    await page.getByRole('link', { name: /Send payment reminder \(phone\)/ }).waitFor();
    const compressed = (await Promise.all(scripts)).reduce((sum, size) => sum + size, 0);
    expect(compressed).toBeGreaterThan(0);
    expect(compressed).toBeLessThan(250 * 1024);
    process.stdout.write(
      `first load of the inbox: ${(compressed / 1024).toFixed(1)} KB of compressed JavaScript\n`,
    );
    const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    expect(await fits()).toBe(true);
    await checkPage(page, 'inbox-phone');
    await page.getByRole('link', { name: /Send payment reminder \(phone\)/ }).click();
    await page.getByRole('heading', { name: 'Send payment reminder (phone)' }).waitFor();
    await page.getByText('€1,234.50').first().waitFor();
    expect(await fits()).toBe(true);
    await checkPage(page, 'approval-phone', { fullPage: true });
    await page.getByRole('link', { name: '← All approvals' }).click();
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await phone.close();
    await api.PATCH('/api/work-tasks/{task_uid}', {
      params: { path: { task_uid: task.uid } },
      body: { action: 'reject', resolution_note: 'Done by phone.' },
    });
  });

  it('sign out', async () => {
    await adaPage.goto(`${server.url}/app/inbox`);
    await adaPage.getByRole('button', { name: /^Account/ }).click();
    await adaPage.getByRole('button', { name: 'Sign out' }).click();
    await adaPage.getByText('You have signed out.').waitFor();
    await adaPage.goto(`${server.url}/app/inbox`);
    await adaPage.waitForURL(`${server.url}/app/sign-in`);
    expect(checked).toEqual(
      expect.arrayContaining([
        'sign-in',
        'forgot-password',
        'reset-password',
        'accept-invitation',
        'inbox-empty',
        'approval',
      ]),
    );
  });
});
