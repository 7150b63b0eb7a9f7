/* eslint-disable @typescript-eslint/no-explicit-any -- Block Kit is read field by field */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack, type SlackMessage } from '../helpers/fake-slack.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';
import type { Browser } from 'playwright-core';
import type { RemitClient } from '../../packages/client/src/index.ts';
import {
  ADA,
  checkPage,
  DESKTOP,
  newContext,
  setFirstPassword,
  SHOTS,
  signIn,
  startConsoleRun,
  stopConsoleRun,
} from './harness.ts';

/**
 * An approval decided in Slack, across real processes (docs/slack.md): the server posts to the Slack
 * stand-in, the test clicks Approve as Slack would (a signed request to the server's interactivity
 * endpoint), the message is updated in place, and the console shows who decided. The message is drawn
 * from the Block Kit the stand-in received by a small preview (Slack's own client cannot run here),
 * for the screenshots in docs/approvals.md and docs/slack.md.
 */

const CHANNEL = 'C0COLLECT';
let slack: FakeSlack;
let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;

const escape = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\n/g, '<br>');

/** A Slack-like drawing of a message's blocks: sections, context lines and buttons. */
function preview(message: SlackMessage): string {
  const blocks = (message.blocks as any[]).map((block) => {
    if (block.type === 'section') return `<div class="section">${escape(block.text.text)}</div>`;
    if (block.type === 'context')
      return `<div class="context">${block.elements.map((e: any) => escape(e.text)).join(' ')}</div>`;
    if (block.type === 'actions')
      return `<div class="actions">${block.elements
        .map(
          (e: any) =>
            `<span class="button ${e.style ?? ''}">${escape(e.text.text)}${e.url ? ' ↗' : ''}</span>`,
        )
        .join('')}</div>`;
    return '';
  });
  return `<!doctype html><html lang="en"><head><title>Slack preview</title><style>
    body { font: 15px/1.46 -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; background: #fff; color: #1d1c1d; }
    .channel { padding: 12px 20px; border-bottom: 1px solid #ddd; font-weight: 700; }
    .message { display: flex; gap: 8px; padding: 12px 20px; max-width: 760px; }
    .avatar { width: 36px; height: 36px; border-radius: 6px; background: #1f6f5c; color: #fff; display: grid; place-items: center; font-weight: 700; }
    .name { font-weight: 900; } .app { font-size: 10px; background: #ddd; border-radius: 2px; padding: 1px 3px; margin-left: 4px; }
    .section { margin: 4px 0; } .context { color: #616061; font-size: 13px; margin: 6px 0; }
    .section + .section { border-left: 4px solid #ddd; padding-left: 10px; color: #333; }
    .actions { display: flex; gap: 8px; margin-top: 8px; }
    .button { border: 1px solid #bbb; border-radius: 4px; padding: 4px 12px; font-weight: 700; font-size: 13px; }
    .primary { background: #007a5a; color: #fff; border-color: #007a5a; } .danger { color: #e01e5a; border-color: #e01e5a; }
  </style></head><body><div class="channel"># collections</div><div class="message"><div class="avatar">R</div><div>
  <div><span class="name">Remit</span><span class="app">APP</span></div>${blocks.join('')}</div></div></body></html>`;
}

async function shoot(message: SlackMessage, name: string) {
  const context = await browser.newContext({ viewport: { width: 820, height: 420 } });
  const page = await context.newPage();
  await page.setContent(preview(message));
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  await context.close();
}

describe('deciding in Slack', { timeout: 90_000 }, () => {
  beforeAll(async () => {
    slack = await new FakeSlack().start();
    slack.channel(CHANNEL, true);
    slack.user('U0ADA', ADA.name, ADA.email);
    ({ database, server, browser, api } = await startConsoleRun(
      'remit-e2e-slack-',
      slack.env({ interactive: true }),
    ));
  });
  afterAll(async () => {
    await stopConsoleRun({ browser, server, database });
    await slack?.close();
  });

  it('Approve in Slack: decided as Ada, the message updated in place, the console says so', async () => {
    const { data: agent } = await api.POST('/api/agents', {
      body: {
        name: 'Collector',
        status: 'active',
        notification_config: { chat_channel_id: CHANNEL, events: {} } as any,
      },
    });
    const agentUid = agent.uid;
    const { data: raised } = await api.POST('/api/agents/{agent_uid}/approvals', {
      params: { path: { agent_uid: agentUid } },
      body: {
        title: 'Send a second reminder for INV-1042',
        reasoning: 'INV-1042 is 12 days overdue and Globex has not answered the first reminder.',
        tool_args: {
          type: 'send_email',
          subject: 'Second reminder: invoice INV-1042',
          recipients: ['ap@globex.test'],
          body: 'Dear Hank,\n\nInvoice INV-1042 (€4,115.00) was due 12 days ago. Please let us know when we can expect payment.\n\nBest regards,\nAcme Collections',
        },
        trigger: { type: 'schedule' },
      },
    });
    const taskUid = raised.uid;
    const message = await until(
      async () => slack.messages.find((m) => JSON.stringify(m.blocks ?? '').includes(taskUid)),
      'the Slack message',
    );
    await shoot(message, 'slack-approval-message');

    // Ada clicks Approve: Slack's signed request reaches the server's endpoint.
    const { body, headers } = slack.signed(slack.clickPayload(message, 'remit_approve', 'U0ADA'));
    const res = await fetch(`${server.url}/api/slack/interactions`, { method: 'POST', headers, body });
    expect(res.status, await res.text()).toBe(200);
    await until(async () => slack.message(message.ts)!.updates > 0, 'the message to be updated');
    await shoot(slack.message(message.ts)!, 'slack-approval-decided');
    const status = (slack.message(message.ts)!.blocks as any[]).find((b) => b.block_id === 'remit_status');
    expect(status.elements[0].text).toMatch(/^✅ Approved by Ada Lovelace at /);

    await setFirstPassword({ server, database });
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.setViewportSize(DESKTOP);
    await signIn(page, server.url);
    await page.goto(`${server.url}/app/inbox/${taskUid}`);
    await page.getByText('Approved', { exact: false }).first().waitFor();
    await checkPage(page, 'slack-approval-console');
    await context.close();
  });
});
