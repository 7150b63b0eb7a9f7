import crypto from 'node:crypto';
import type { Config } from '../../config.ts';
import type { Db } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import type { MailTransports } from '../../platform/mail/mailer.ts';
import type { SecretKey } from '../../platform/secrets/secret-box.ts';
import { getInvoice } from '../invoices/invoices.service.ts';
import { sendSystemMail } from '../people/system-mail.ts';
import { approvalEmail, type InvoiceFacts } from './approval-email-text.ts';
import { approverContext, type ApprovalEmailJobData } from './approval-emails.ts';
import * as repo from './approval-emails.repository.ts';
import { approvalLinkKeys, approvalLinkUrl, signApprovalLink } from './approval-links.ts';
import { findTaskInOrganization, viewTask, type TaskView } from './work-tasks.service.ts';

export interface ApprovalEmailDeps {
  db: Db;
  config: Pick<Config, 'mailFrom' | 'publicBaseUrl' | 'approvalLinkTtlH'>;
  mail: MailTransports;
  /** The configured secret keys (SecretBox.keys): the first one's derived key signs the links. */
  secretKeys: readonly SecretKey[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The invoices an approval is about: its context entities, then the invoice its tool names. */
export function invoiceUidsOf(task: TaskView): string[] {
  const entities = task.context_entities as { entity_type: string; entity_uid: string }[];
  const uids = entities.filter((e) => e.entity_type === 'invoice').map((e) => e.entity_uid);
  const named = (task.tool_args as Record<string, unknown> | undefined)?.invoice_uid;
  if (typeof named === 'string' && UUID.test(named)) uids.push(named.toLowerCase());
  return [...new Set(uids)];
}

/**
 * What the inbox shows of each invoice (amount due, days overdue, the client), read as the approver:
 * an invoice they may not see (a member's unassigned invoice) is left out, as it is of their inbox.
 */
export async function invoiceFactsFor(db: Db, ctx: RequestContext, task: TaskView): Promise<InvoiceFacts[]> {
  const facts: InvoiceFacts[] = [];
  for (const uid of invoiceUidsOf(task).slice(0, 5)) {
    const invoice = await getInvoice(db, ctx, uid).catch((error: unknown) => {
      if ((error as { code?: string }).code === 'not_found') return undefined;
      throw error;
    });
    if (!invoice) continue;
    const counterparty =
      invoice.invoice_type === 'ACCOUNTS_PAYABLE' ? invoice.parties.service_provider : invoice.parties.client;
    facts.push({
      uid: invoice.uid,
      invoice_number: invoice.invoice_number,
      invoice_type: invoice.invoice_type,
      status: invoice.status,
      currency: invoice.currency,
      total_cents: invoice.total_cents,
      amount_remaining_cents: invoice.amount_remaining_cents,
      due_date: invoice.due_date ? new Date(invoice.due_date).toISOString() : null,
      overdue_days: invoice.overdue_days,
      counterparty_name: counterparty?.name ?? null,
    });
  }
  return facts;
}

/**
 * The job `remit.approvals.email` (docs/approval-emails.md#sending): one email to each recipient the
 * raise wrote down, each with a link of its own, signed for that person. Delivery is at most once per
 * person: a recipient is marked `sending` (committed) before their message goes, so a job run again —
 * pg-boss's retry, or a second worker — never mails them twice; a process that dies mid-send leaves
 * that one person unmailed (the approval is still in their inbox). A send the mail server refused
 * puts the person back to `pending` and the job fails, to be retried for them alone. Nobody is mailed
 * about an approval already decided, and nobody who left the organization or turned the emails off.
 */
export async function sendApprovalEmails(
  deps: ApprovalEmailDeps,
  data: ApprovalEmailJobData,
  jobId: string,
  now: () => Date = () => new Date(),
): Promise<{ sent: number; skipped: number }> {
  const { db } = deps;
  const org = data.organization_uid;
  const task = await findTaskInOrganization(db, org, data.task_uid);
  if (!task || task.type !== 'hil_approval') return { sent: 0, skipped: 0 };
  if (task.resolution) {
    return {
      sent: 0,
      skipped: await repo.skipPendingRecipients(db, org, task.uid, 'decided before it went'),
    };
  }
  const view = await viewTask(db, task);
  const [signingKey] = approvalLinkKeys(deps.secretKeys.slice(0, 1));
  const base = deps.config.publicBaseUrl;
  const origin = view.origin as { agent_name?: string };
  let sent = 0;
  let skipped = 0;
  const failures: string[] = [];
  for (const recipient of await repo.listRecipients(db, org, task.uid, 'pending')) {
    if (!(await repo.claimRecipient(db, org, task.uid, recipient.userUid))) continue;
    const jti = crypto.randomUUID();
    const found = await approverContext(
      db,
      { organizationUid: org, userUid: recipient.userUid, jti },
      { requestId: `job:${jobId}`, clientAddress: null },
    );
    if (!found?.approver.approvalEmails) {
      const why = found ? 'approval emails turned off' : 'no longer a member';
      await repo.settleRecipient(db, org, task.uid, recipient.userUid, { status: 'skipped', lastError: why });
      skipped += 1;
      continue;
    }
    // A link never outlives the approval's own deadline (its policy's expiry, docs/approvals.md).
    const ttlEnd = now().getTime() + deps.config.approvalLinkTtlH * 3_600_000;
    const expiresAt = new Date(task.expiresAt ? Math.min(ttlEnd, task.expiresAt.getTime()) : ttlEnd);
    const token = signApprovalLink(
      {
        v: 1,
        task_uid: task.uid,
        user_uid: recipient.userUid,
        organization_uid: org,
        exp: Math.floor(expiresAt.getTime() / 1000),
        jti,
      },
      signingKey!,
    );
    const email = approvalEmail({
      organizationName: found.approver.organizationName,
      agentName: origin.agent_name || 'An agent',
      title: task.title,
      reasoning: task.reasoning ?? '',
      toolArgs: task.toolArgs ?? {},
      invoices: await invoiceFactsFor(db, found.ctx, view),
      reviewUrl: approvalLinkUrl(base, token),
      inboxUrl: `${base}/app/inbox/${task.uid}`,
      expiresAt,
    });
    try {
      await sendSystemMail(deps, { to: found.approver.email, ...email });
      await repo.settleRecipient(db, org, task.uid, recipient.userUid, {
        status: 'sent',
        sentAt: now(),
        lastError: null,
      });
      sent += 1;
    } catch (error) {
      const reason = (error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : '';
      await repo.settleRecipient(db, org, task.uid, recipient.userUid, {
        status: 'pending',
        lastError: `${(error as Error).message}${reason ? `: ${reason}` : ''}`.slice(0, 500),
      });
      failures.push(found.approver.email);
    }
  }
  if (failures.length > 0) {
    throw new Error(`Approval email not sent to ${failures.length} recipient(s); the job retries them`);
  }
  return { sent, skipped };
}
