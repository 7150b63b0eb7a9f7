import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailedTokenIn, totpCode } from '../helpers/people.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';
import {
  ADA,
  checkPage,
  DESKTOP,
  newContext,
  PHONE,
  setFirstPassword,
  signIn,
  startConsoleRun,
  stopConsoleRun,
} from './harness.ts';

/**
 * The people settings in a real browser (docs/console.md#settings): your account (password, second
 * factor, sessions), API keys (created, shown once, used, revoked) and members (invited from the page,
 * accepted, role changed, removed). The steps build on each other, so they run in order; each section
 * is checked with axe-core and for CSP violations at desktop and phone widths, and photographed.
 */

const GRACE = { name: 'Grace Hopper', email: 'grace@acme.test', password: 'compile the nanoseconds' };
const FIREFOX_ON_MAC = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14.7; rv:133.0) Gecko/20100101 Firefox/133.0';

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let ada: BrowserContext;
let page: Page;
/** Ada's password as it is now (changed by the first test). */
const adaNow = { ...ADA };

/**
 * Nothing when the page does not scroll sideways; else what sticks out past the window's right edge
 * (an element in a box that scrolls on its own still counts when it is positioned outside that box).
 */
const widerThanWindow = (target: Page = page) =>
  target.evaluate(() => {
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth <= width) return [];
    return [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > width + 1)
      .map(
        (e) =>
          `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} (${Math.round(e.getBoundingClientRect().right)} px)`,
      )
      .slice(-10);
  });

/** The section at desktop width (checked), then at 375 px (checked, nothing wider than the screen). */
async function checkBothWidths(name: string) {
  await checkPage(page, `settings-${name}`, { fullPage: true });
  await page.setViewportSize(PHONE);
  try {
    expect(await widerThanWindow(), `${name} at 375 px`).toEqual([]);
    await checkPage(page, `settings-${name}-phone`, { fullPage: true });
  } finally {
    await page.setViewportSize(DESKTOP);
  }
}

/** The newest link to `pathname` emailed to `to` that is not one of `seen`. */
function emailedToken(to: string, pathname: string, seen: string[] = []): Promise<string> {
  return until(() => {
    try {
      const token = emailedTokenIn(database.dataDir, to, pathname);
      return Promise.resolve(seen.includes(token) ? undefined : token);
    } catch {
      return Promise.resolve(undefined);
    }
  }, `a ${pathname} link emailed to ${to}`);
}

/** GET /api/me with an API key, from outside the browser, as a program would. */
const meWith = (key: string) =>
  fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${key}` } });

const focusedText = (target: Page = page) => target.evaluate(() => document.activeElement?.textContent ?? '');

describe('the console: your account, API keys, members', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    ({ database, server, browser } = await startConsoleRun('remit-e2e-people-'));
    await setFirstPassword({ server, database });
    ada = await newContext(browser);
    page = await ada.newPage();
    await signIn(page, server.url);
  }, 120_000);

  afterAll(() => stopConsoleRun({ browser, server, database }));

  it('your account: the password changed (its rules said first); the console goes on; a fresh browser signs in with it', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.waitForURL(`${server.url}/app/settings/account`);
    await page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
    const settingsNav = page.getByRole('navigation', { name: 'Settings' });
    // These three come first; the organization's sections follow them.
    expect((await settingsNav.getByRole('link').allTextContents()).slice(0, 3)).toEqual([
      'Your account',
      'API keys',
      'Members',
    ]);
    const main = page.getByRole('main');
    await main.getByText('Admin of Acme Collections').waitFor();
    await main.getByText(ADA.email, { exact: true }).waitFor();
    await page.getByRole('row', { name: /This browser/ }).waitFor();

    const newPassword = 'difference engine 1822';
    await page.getByLabel('Current password', { exact: true }).fill(ADA.password);
    await page.getByLabel('New password', { exact: true }).fill('too short');
    await page.getByLabel('Repeat the new password', { exact: true }).fill('too short');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('The new password needs at least 12 characters.').waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('new-password');

    // A wrong current password is said beside its field, and the session goes on (a 401 that is not the end).
    await page.getByLabel('Current password', { exact: true }).fill('not my password at all');
    await page.getByLabel('New password', { exact: true }).fill(newPassword);
    await page.getByLabel('Repeat the new password', { exact: true }).fill(newPassword);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('This is not your current password.').waitFor();
    expect(page.url()).toBe(`${server.url}/app/settings/account`);

    await page.getByLabel('Current password', { exact: true }).fill(ADA.password);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page
      .getByText(/Your password is changed\. Every other browser and device was signed out/)
      .waitFor();
    adaNow.password = newPassword;

    const fresh = await newContext(browser);
    const freshPage = await fresh.newPage();
    await signIn(freshPage, server.url, adaNow);
    await fresh.close();
  });

  it('approval requests by email: turned on, still on after a reload, turned off', async () => {
    await page.goto(`${server.url}/app/settings/account`);
    const box = page.getByRole('checkbox', { name: /Email me each approval an agent asks for/ });
    expect(await box.isChecked()).toBe(false);
    await box.check();
    await page.getByText(`will be emailed to ${ADA.email}`).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Approval requests by email' }).waitFor();
    expect(await box.isChecked()).toBe(true);
    await box.uncheck();
    await page.getByText('Approval requests will no longer be emailed to you.').waitFor();
    expect(await box.isChecked()).toBe(false);
  });

  it('second factor: set up from the QR code’s key, turned on, asked at sign-in, turned off with the password', async () => {
    // A write right after the password change: the console carries the new session's anti-forgery token.
    await page.getByRole('button', { name: 'Set up a second factor' }).click();
    await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
    const shown = (await page.getByTestId('totp-secret').textContent())!;
    expect(shown).toMatch(/^([A-Z2-7]{4} )+[A-Z2-7]{1,4}$/);
    const secret = shown.replace(/\s+/g, '');
    await checkPage(page, 'settings-totp-setup', { fullPage: true });

    await page.getByLabel('Code from the app').fill('12345');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByText('Type the six digits the app shows.').waitFor();
    await page.getByLabel('Code from the app').fill(totpCode(secret));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByText(/The second factor is on\./).waitFor();
    await page.getByText('On.', { exact: true }).waitFor();

    await page.getByRole('button', { name: /^Account/ }).click();
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByText('You have signed out.').waitFor();
    await page.getByLabel('Email').fill(adaNow.email);
    await page.getByLabel('Password', { exact: true }).fill(adaNow.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The code of this period turned the factor on; the next period's is still good (one step of drift).
    await page.getByLabel('Authentication code').fill(totpCode(secret, 1));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${server.url}/app/inbox`);

    await page.goto(`${server.url}/app/settings/account`);
    await page.getByText('On.', { exact: true }).waitFor();
    // Its codes of this period and the next are spent: off with the password, as after a lost phone.
    await page.getByLabel('my password (the phone is lost)').check();
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill('not my password at all');
    await page.getByRole('button', { name: 'Turn off the second factor' }).click();
    await page.getByText('That is not your password.').waitFor();
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill(adaNow.password);
    await page.getByRole('button', { name: 'Turn off the second factor' }).click();
    await page.getByText(/The second factor is off\./).waitFor();
    await page.getByRole('button', { name: 'Set up a second factor' }).waitFor();
  });

  it('sessions: another browser is listed, signed out from here, and lands on sign-in', async () => {
    const other = await browser.newContext({
      viewport: DESKTOP,
      locale: 'en-US',
      timezoneId: 'Europe/Berlin',
      userAgent: FIREFOX_ON_MAC,
    });
    const otherPage = await other.newPage();
    await signIn(otherPage, server.url, adaNow);
    const third = await newContext(browser);
    const thirdPage = await third.newPage();
    await signIn(thirdPage, server.url, adaNow);

    await page.reload();
    const firefox = page.getByRole('row', { name: /Firefox 133 on macOS/ });
    await firefox.waitFor();
    expect(await page.getByRole('row', { name: /This browser/ }).count()).toBe(1);
    await checkBothWidths('account');
    await firefox.getByRole('button', { name: /^Sign out Firefox 133 on macOS/ }).click();
    await page.getByText('Signed out Firefox 133 on macOS.').waitFor();
    await expect.poll(() => firefox.count()).toBe(0);
    // That browser's next request (its approvals poll) is refused: it is sent to sign in.
    await otherPage.getByText('Your session has ended. Sign in again to go on.').waitFor();
    expect(otherPage.url()).toMatch(/\/app\/sign-in/);

    await page.getByRole('button', { name: 'Sign out everywhere else' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Sign out everywhere else?' });
    await dialog.waitFor();
    expect(await focusedText()).toBe('Cancel');
    await dialog.getByRole('button', { name: 'Sign out everywhere else' }).click();
    // The third browser only: the one that tried the new password in the first test was signed out
    // when the second factor was turned on.
    await page.getByText('Signed out 1 other session. This browser stays signed in.').waitFor();
    await page.getByText('You are signed in only here.').waitFor();
    await thirdPage.goto(`${server.url}/app/settings/account`);
    await thirdPage.waitForURL(/\/app\/sign-in\?next=/);
    await other.close();
    await third.close();
  });

  it('API keys: created with a scope, the key shown once and copied, used against /api/me, revoked → 401', async () => {
    await ada.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    // remit init's key is Ada's too.
    await page.getByRole('row', { name: /Initial admin key/ }).waitFor();

    await page.getByLabel('Name', { exact: true }).fill('Reporting script');
    await page.getByLabel('Expires after (days)').fill('30');
    await page.getByLabel('Only the scopes chosen below').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('Choose at least one scope, or full access.').waitFor();
    await page.getByLabel('invoices:read').check();
    await page.getByLabel('api_keys:read').check();
    // An admin may grant the admin-only scopes; they are there and enabled.
    expect(await page.getByLabel('members:read').isEnabled()).toBe(true);
    await page.getByRole('button', { name: 'Create key' }).click();

    await page.getByRole('heading', { name: 'Your new key “Reporting script”' }).waitFor();
    await page.getByText('Copy it now: this is the only time Remit shows it.').waitFor();
    const key = await page.getByLabel(/^Key for /).inputValue();
    expect(key).toMatch(/^rk_live_[0-9A-Za-z]{38}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await checkPage(page, 'settings-key-created', { fullPage: true });

    const me = await meWith(key);
    expect(me.status).toBe(200);
    expect(((await me.json()) as { data: { user: { email: string } } }).data.user.email).toBe(ADA.email);

    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.getByRole('heading', { name: 'Create a key' }).waitFor();
    // Never shown again: the list has its last four characters only.
    expect(await page.content()).not.toContain(key);
    const row = page.getByRole('row', { name: /Reporting script/ });
    await row.getByRole('cell', { name: `rk_live_...${key.slice(-4)}` }).waitFor();
    await row.getByText('invoices:read, api_keys:read').waitFor();
    await row.getByText('Active').waitFor();
    await checkBothWidths('keys');

    await row.getByRole('button', { name: 'Revoke the key Reporting script' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Revoke the key “Reporting script”?' });
    await dialog.getByText(/get 401 from their very next request/).waitFor();
    await checkPage(page, 'settings-key-revoke');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page
      .getByText('Revoked the key “Reporting script”. Programs using it get 401 from now on.')
      .waitFor();
    await row.getByText('Revoked').waitFor();
    expect((await meWith(key)).status).toBe(401);
  });

  it('members: invited from the page with the keyboard alone, accepted; the member sees no Members; role changed; removed', async () => {
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    await page.getByText('No pending invitations').waitFor();

    // The last admin cannot step down: the API's refusal, in its words.
    await page.getByRole('button', { name: 'Make member: yourself' }).click();
    await page
      .getByRole('alertdialog', { name: 'Stop being an admin?' })
      .getByRole('button', { name: 'Make me a member' })
      .click();
    await page.getByText(/last admin: make another member an admin first/).waitFor();

    // Keyboard only: type the address, Tab to the role, Tab to the button, Enter; twice.
    const invite = async (email: string) => {
      await page.getByLabel('Email').focus();
      await page.keyboard.type(email);
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('invite-role');
      await page.keyboard.press('Tab');
      expect(await focusedText()).toBe('Send invitation');
      await page.keyboard.press('Enter');
      await page.getByText(`Invitation sent to ${email}.`, { exact: false }).waitFor();
    };
    await invite(GRACE.email);
    await invite('linus@acme.test');
    await invite('ken@acme.test');
    const graceRow = page.getByRole('row', { name: new RegExp(GRACE.email) });
    await graceRow.getByText('Ada Lovelace (you)').waitFor();
    // One open invitation per address: said in words.
    await page.getByLabel('Email').fill(GRACE.email);
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page
      .getByRole('alert')
      .getByText(/already has a pending invitation/)
      .waitFor();
    await page.getByLabel('Email').fill('');
    await expect.poll(() => page.getByRole('alert').count()).toBe(0);

    // Revoking with the keyboard: the dialog opens on Cancel; Tab, Enter.
    await page.getByRole('button', { name: 'Revoke the invitation to ken@acme.test' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('alertdialog', { name: 'Revoke the invitation to ken@acme.test?' }).waitFor();
    expect(await focusedText()).toBe('Cancel');
    await page.keyboard.press('Tab');
    expect(await focusedText()).toBe('Revoke invitation');
    await page.keyboard.press('Enter');
    await page.getByText('Revoked the invitation to ken@acme.test.').waitFor();
    await expect.poll(() => page.getByRole('row', { name: /ken@acme\.test/ }).count()).toBe(0);

    const first = await emailedToken(GRACE.email, '/accept-invitation');
    await graceRow.getByRole('button', { name: `Resend the invitation to ${GRACE.email}` }).click();
    await page
      .getByText(/Sent the invitation to grace@acme\.test again; the earlier link no longer works/)
      .waitFor();

    // Grace follows the newest link, joins, signs in.
    const token = await emailedToken(GRACE.email, '/accept-invitation', [first]);
    const grace = await newContext(browser);
    const gracePage = await grace.newPage();
    await gracePage.goto(`${server.url}/accept-invitation?token=${token}`);
    await gracePage.getByRole('heading', { name: 'Join Acme Collections' }).waitFor();
    await gracePage.getByLabel('Your name').fill(GRACE.name);
    await gracePage.getByLabel('New password', { exact: true }).fill(GRACE.password);
    await gracePage.getByLabel('Repeat the password').fill(GRACE.password);
    await gracePage.getByRole('button', { name: 'Create account and join' }).click();
    await gracePage.getByText('You joined Acme Collections. Sign in to start.').waitFor();
    await gracePage.getByLabel('Password', { exact: true }).fill(GRACE.password);
    await gracePage.getByRole('button', { name: 'Sign in' }).click();
    await gracePage.waitForURL(`${server.url}/app/inbox`);

    // A member's settings have no Members section, and its address leads to their account.
    await gracePage.goto(`${server.url}/app/settings/members`);
    await gracePage.waitForURL(`${server.url}/app/settings/account`);
    const graceNav = gracePage.getByRole('navigation', { name: 'Settings' });
    const graceSections = await graceNav.getByRole('link').allTextContents();
    expect(graceSections.slice(0, 2)).toEqual(['Your account', 'API keys']);
    expect(graceSections).not.toContain('Members');
    await gracePage.getByRole('main').getByText('Member of Acme Collections').waitFor();
    await graceNav.getByRole('link', { name: 'API keys' }).click();
    await gracePage.getByText('No API keys yet').waitFor();
    await gracePage.getByLabel('Only the scopes chosen below').check();
    expect(await gracePage.getByLabel('members:read').isDisabled()).toBe(true);
    expect(await gracePage.getByLabel('invoices:read').isEnabled()).toBe(true);
    await checkPage(gracePage, 'settings-keys-member', { fullPage: true });

    // Ada sees her joined (her invitation no longer pending), makes her an admin, then removes her.
    await page.reload();
    const member = page.getByRole('row', { name: /Grace Hopper/ });
    await member.getByRole('cell', { name: 'Member', exact: true }).waitFor();
    await expect.poll(() => page.getByRole('row', { name: new RegExp(GRACE.email) }).count()).toBe(1);
    await page.getByRole('row', { name: /linus@acme\.test/ }).waitFor();
    await checkBothWidths('members');
    await member.getByRole('button', { name: 'Make admin: Grace Hopper' }).click();
    await page.getByText('Grace Hopper is now an admin.').waitFor();
    await member.getByRole('cell', { name: 'Admin', exact: true }).waitFor();
    // Her session acts as an admin from her next request: the Members section opens for her.
    await gracePage.reload();
    await gracePage
      .getByRole('navigation', { name: 'Settings' })
      .getByRole('link', { name: 'Members' })
      .waitFor();

    await member.getByRole('button', { name: 'Remove Grace Hopper' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Remove Grace Hopper from Acme Collections?' });
    await dialog.getByText(/loses access to Acme Collections at once/).waitFor();
    await dialog.getByRole('button', { name: 'Remove', exact: true }).click();
    await page.getByText(`Removed ${GRACE.email}: 0 API keys revoked, 0 open tasks unassigned.`).waitFor();
    await expect.poll(() => member.count()).toBe(0);
    await grace.close();
  });
});
