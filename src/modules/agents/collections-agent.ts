/**
 * The built-in `collections` agent (CONTRACT §5): it chases overdue receivables with reminders written
 * by the email prepare engine, asks a person before sending (unless its send_email tool says
 * otherwise), sends what was approved, and hands client replies to a person.
 */
import type { DbOrTx } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { createDraft, getDraft } from '../email/email-drafts.service.ts';
import { renderEmailHtml } from '../email/email-html.ts';
import { prepareEmail, reviseEmail } from '../email/email-prepare.service.ts';
import { runSendJob } from '../email/email-sending.ts';
import { formatLongDate, formatMoney } from '../email/email-tokens.ts';
import { getInvoice } from '../invoices/invoices.service.ts';
import { searchKnowledge } from '../knowledge/knowledge.service.ts';
import { withPolicy } from '../../platform/llm/builtin-composer.ts';
import type { PolicyPassage } from '../../platform/llm/text-generation.ts';
import type { InvoiceView } from '../invoices/invoice-view.ts';
import { systemContext } from '../tenancy/system-context.ts';
import {
  findOpenTasksAbout,
  findTaskInOrganization,
  openTaskForAgent,
  raiseApproval,
  registerFollowUpCheck,
  reviseApproval,
  type ApprovalDecision,
} from '../work-tasks/work-tasks.service.ts';
import { findPartyByContactEmail, recordOutboundEmail } from '../conversations/conversations.service.ts';
import {
  registerExecutor,
  RunFailure,
  type RunEnv,
  type RunOutcome,
  type RunStep,
} from './agent-runs.service.ts';
import type { AgentRow } from './agents.repository.ts';
import { COLLECTIONS_AGENT_TYPE } from './agents.service.ts';
import * as collections from './collections.repository.ts';
import { notify } from './notifications.service.ts';

const DAY_MS = 86_400_000;

interface SendEmailArgs {
  type: 'send_email';
  subject: string;
  body: string;
  recipients: string[];
  invoice_uid: string;
}

interface Skip {
  invoice_uid: string;
  invoice_number: string;
  reason: string;
}

const EMAIL = /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/;
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Invoices examined per query, and at most per run (however many of them must be left alone). */
const BATCH = 50;
const MAX_EXAMINED = 1000;

function clientOf(view: InvoiceView): { name: string; email: string | null } {
  const client = view.parties.client;
  return { name: client?.name ?? 'the client', email: client?.billing_contact?.email || null };
}

function amountLeft(view: InvoiceView): string {
  return formatMoney(view.amount_remaining_cents, view.currency);
}

/** The reminder in template mode: tokens for what the engine resolves, the amount still open spelled out. */
function reminderTemplate(view: InvoiceView): { subject: string; body_text: string } {
  const pay = view.invoice_link?.trim() ? '\n\nYou can pay online here: {payment_link}' : '';
  return {
    subject: 'Payment reminder: invoice {invoice_number} is {days_overdue} days overdue',
    body_text:
      `Hello {client_name},\n\nOur records show that invoice {invoice_number}, due on {due_date}, still has ` +
      `**${amountLeft(view)}** outstanding and is now {days_overdue} days past due.${pay}\n\n` +
      `If you have already paid, please ignore this message or reply with the payment details.\n\n` +
      `Thank you,\n{organization_name}`,
  };
}

/**
 * What the agent looks for in the organization's knowledge before writing a reminder: the words of an
 * overdue invoice's situation, in English and Spanish (the organization's search language stems them;
 * words of the other language simply match nothing). Web-search syntax: any of these.
 */
export const POLICY_QUERY =
  '"late payment" or "late fee" or overdue or "past due" or "payment terms" or interest or penalty or ' +
  'mora or "pago atrasado" or vencida or "condiciones de pago" or intereses';
/** Passages given to the writer: the best two documents. */
const POLICY_PASSAGES = 2;

/**
 * The organization's own policy on late payment, from its knowledge (full-text search in its search
 * language, the call's organization only): the best passages with their documents' names, for the
 * writer to cite. Nothing found (or no knowledge): none, and the reminder is written as before.
 */
async function findPolicy(env: RunEnv, ctx: RequestContext): Promise<PolicyPassage[]> {
  const { items } = await searchKnowledge({ db: env.db }, ctx, POLICY_QUERY, {
    page: 1,
    perPage: POLICY_PASSAGES,
  });
  return items
    .filter((hit) => hit.snippet.text !== '')
    .map((hit) => ({ filename: hit.filename, text: hit.snippet.text }));
}

/**
 * Inference when a language model is configured, the template otherwise (or when inference fails).
 * Either way the organization's policy is used when its knowledge has some: the model gets the passages
 * to cite, the template gets one cited sentence before its sign-off.
 */
async function composeReminder(env: RunEnv, ctx: RequestContext, step: RunStep, view: InvoiceView) {
  const template = reminderTemplate(view);
  const policy = await findPolicy(env, ctx);
  const cited = policy.map((p) => p.filename);
  if (env.config.llm.kind !== 'builtin') {
    const inferred = await prepareEmail(
      env.db,
      env.generator,
      ctx,
      {
        context_type: 'invoice',
        context_uid: view.uid,
        mode: 'inference',
        prompt_hint: (step.agent.instructions || 'A polite, firm payment reminder.').slice(0, 4000),
      },
      new Date(),
      { policy },
    );
    step.addUsage(inferred.usage);
    if (!inferred.email.errors.some((e) => e.token === '{inference}'))
      return {
        subject: inferred.email.subject,
        body: inferred.email.body_text,
        mode: 'inference' as const,
        policy: cited,
      };
  }
  const rendered = await prepareEmail(env.db, env.generator, ctx, {
    context_type: 'invoice',
    context_uid: view.uid,
    mode: 'template',
    ...template,
  });
  // After rendering: the passage is the organization's text, never a template of tokens.
  const email = withPolicy(
    { subject: rendered.email.subject, body_text: rendered.email.body_text },
    policy[0],
  );
  return {
    subject: email.subject,
    body: email.body_text,
    mode: 'template' as const,
    policy: cited.slice(0, 1),
  };
}

/** Why the agent must leave this invoice alone now, or null. */
async function reasonToWait(
  db: DbOrTx,
  agent: AgentRow,
  invoiceUid: string,
  minDaysBetween: number,
  now: Date,
): Promise<string | null> {
  const entity = { entity_type: 'invoice' as const, entity_uid: invoiceUid };
  if ((await findOpenTasksAbout(db, agent.organizationUid, entity, 'hil_approval')).length > 0)
    return 'an approval for this invoice is already open';
  const openTasks = await findOpenTasksAbout(db, agent.organizationUid, entity, 'task');
  if (openTasks.some((t) => t.originAgentUid === agent.uid))
    return "a person is handling the client's reply about this invoice";
  if (await collections.hasApprovedReminderPending(db, agent.organizationUid, invoiceUid))
    return 'a reminder approved for this invoice is about to be sent';
  const last = await collections.lastReminderAt(db, agent.organizationUid, invoiceUid);
  if (last && now.getTime() - last.getTime() < minDaysBetween * DAY_MS)
    return `a reminder went out less than ${minDaysBetween} day(s) ago`;
  return null;
}

/** Creates the draft from the organization's first account, due now, and sends it in this run. */
async function sendReminder(
  env: RunEnv,
  ctx: RequestContext,
  args: SendEmailArgs & { partyUid?: string | null },
) {
  const account = await collections.firstEmailAccount(env.db, ctx.organizationUid);
  if (!account) throw new Error('The organization has no email account to send from');
  const draft = await createDraft({ db: env.db, jobs: env.jobs, storage: env.storage }, ctx, {
    from_account_id: account.uid,
    to: args.recipients,
    subject: args.subject,
    body_text: args.body,
    body_html: renderEmailHtml(args.body),
    context_type: 'invoice',
    context_id: args.invoice_uid,
    planned_send_at: new Date().toISOString(),
  });
  // The send job queued with the draft may take it first; the draft's lease lets only one send.
  await runSendJob(
    {
      db: env.db,
      jobs: env.jobs,
      storage: env.storage,
      mailers: env.mailers,
      leaseSeconds: env.config.emailSendLeaseS,
    },
    { organization_uid: ctx.organizationUid, draft_uid: draft.uid },
    ctx,
  );
  for (let waited = 0; ; waited += 250) {
    const current = await getDraft(env.db, ctx, draft.uid);
    if (current.status === 'sent') {
      await recordOutboundEmail(env.db, ctx.organizationUid, {
        partyUid: args.partyUid ?? null,
        subject: current.subject,
        fromEmail: current.from_email,
        to: current.to,
        bodyText: current.body_text,
        messageId: current.message_id,
      });
      return current;
    }
    if (current.status === 'failed' || waited >= 30_000)
      throw new Error(`The reminder could not be sent: ${current.error ?? `still ${current.status}`}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function readSendEmailArgs(toolArgs: Record<string, unknown> | null): SendEmailArgs {
  const args = toolArgs ?? {};
  const recipients = Array.isArray(args.recipients) ? args.recipients : [];
  if (args.type !== 'send_email') throw new Error('The approved action is not send_email');
  if (typeof args.subject !== 'string' || typeof args.body !== 'string')
    throw new Error('The approved email needs a subject and a body');
  if (recipients.length === 0 || !recipients.every((r) => typeof r === 'string' && EMAIL.test(r)))
    throw new Error('The approved email needs one or more valid recipient addresses');
  if (typeof args.invoice_uid !== 'string') throw new Error('The approved email names no invoice');
  return {
    type: 'send_email',
    subject: args.subject,
    body: args.body,
    recipients: recipients as string[],
    invoice_uid: args.invoice_uid,
  };
}

/** The follow-up of an approval: send what the person approved, unless the invoice was settled meanwhile. */
async function sendApproved(env: RunEnv, step: RunStep, ctx: RequestContext): Promise<RunOutcome> {
  const { run, agent } = step;
  const task = run.taskUid
    ? await findTaskInOrganization(env.db, run.organizationUid, run.taskUid)
    : undefined;
  if (!task || task.resolution !== 'approved') throw new Error('The run names no approved task');
  let args: SendEmailArgs;
  try {
    args = readSendEmailArgs(task.toolArgs);
  } catch (error) {
    throw new RunFailure(`Task "${task.title}": ${(error as Error).message}`, null, task.uid);
  }
  const [invoice] = await collections.findInvoices(env.db, run.organizationUid, [args.invoice_uid]);
  if (!invoice) throw new Error('The invoice of the approved reminder no longer exists');
  const base = { task_uid: task.uid, invoice_uid: invoice.uid, invoice_number: invoice.invoiceNumber };
  if (invoice.status !== 'open' || invoice.amountRemainingCents <= 0) {
    const why =
      invoice.amountRemainingCents <= 0 || invoice.status === 'paid'
        ? 'was paid'
        : `became ${invoice.status}`;
    return {
      ...base,
      sent: false,
      summary: `Invoice ${invoice.invoiceNumber} ${why} meanwhile; the reminder approved in task "${task.title}" was not sent`,
    };
  }
  await step.checkpoint();
  if (run.sandbox)
    return {
      ...base,
      sent: false,
      would_send: args,
      summary: `Sandbox: would send the reminder for invoice ${invoice.invoiceNumber} approved in task "${task.title}"`,
    };
  let draft: Awaited<ReturnType<typeof sendReminder>>;
  try {
    draft = await sendReminder(env, ctx, { ...args, partyUid: invoice.clientPartyUid });
  } catch (error) {
    throw new RunFailure(
      `The approved reminder for invoice ${invoice.invoiceNumber} (task "${task.title}") was not sent: ${(error as Error).message}`,
      invoice.uid,
      task.uid,
    );
  }
  await notify(
    { db: env.db, chat: env.chat, jobs: env.jobs },
    {
      agent,
      event: 'action_taken',
      text: `${agent.name} sent the approved payment reminder for invoice ${invoice.invoiceNumber} to ${args.recipients.join(', ')} (subject "${args.subject}"; task ${task.title}).`,
      runUid: run.uid,
      taskUid: task.uid,
      invoiceUid: invoice.uid,
    },
  );
  return {
    ...base,
    sent: true,
    draft_uid: draft.uid,
    message_id: draft.message_id,
    summary: `Reminder for invoice ${invoice.invoiceNumber} sent to ${args.recipients.join(', ')}, as approved in task "${task.title}"`,
  };
}

const ACTIONS: readonly string[] = ['approve', 'reject', 'respond'];

/**
 * The answer a follow-up run acts on (`input.decision`, docs/approvals.md#what-the-follow-up-run-receives).
 * A run requested before answers were carried in its input is an approval's.
 */
function decisionIn(
  input: Record<string, unknown>,
): Partial<ApprovalDecision> & Pick<ApprovalDecision, 'action'> {
  const decision = input.decision as Partial<ApprovalDecision> | undefined;
  if (decision && typeof decision === 'object' && ACTIONS.includes(decision.action as string))
    return decision as Partial<ApprovalDecision> & Pick<ApprovalDecision, 'action'>;
  return { action: 'approve' };
}

const quoted = (text: string, max = 200) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return `"${line.length > max ? `${line.slice(0, max - 1)}…` : line}"`;
};

/** A rejected reminder: nothing is sent; the run records who said no, and why. */
async function recordRejection(
  env: RunEnv,
  step: RunStep,
  decision: Partial<ApprovalDecision>,
): Promise<RunOutcome> {
  const { run } = step;
  const task = run.taskUid
    ? await findTaskInOrganization(env.db, run.organizationUid, run.taskUid)
    : undefined;
  if (!task || task.resolution !== 'rejected') throw new Error('The run names no rejected task');
  const invoiceUid = typeof task.toolArgs?.invoice_uid === 'string' ? task.toolArgs.invoice_uid : null;
  const by = decision.decided_by?.name || 'a person';
  const reason = decision.note ?? task.resolutionNote ?? '';
  return {
    task_uid: task.uid,
    invoice_uid: invoiceUid,
    sent: false,
    rejected: true,
    summary: `Not sent: rejected by ${by}: ${reason} (task "${task.title}")`,
  };
}

/** The reasoning of a revised approval: the agent's first reasons, then how it answered the latest feedback. */
function revisedReasoning(reasoning: string | null, by: string, feedback: string, how: string): string {
  const first = (reasoning ?? '').split('\n\nRevised after ')[0]!;
  return `${first}\n\nRevised after ${by}'s feedback ${quoted(feedback)}: ${how}`;
}

/**
 * A person responded to the reminder with feedback (`action: respond`): the agent rewrites the draft
 * from it — the language model when one is configured, else the feedback added as written (see
 * `applyFeedback`) — and asks for approval again on the same task, with `approval_required`.
 */
async function reviseReminder(
  env: RunEnv,
  step: RunStep,
  ctx: RequestContext,
  decision: Partial<ApprovalDecision>,
): Promise<RunOutcome> {
  const { run, agent } = step;
  const task = run.taskUid
    ? await findTaskInOrganization(env.db, run.organizationUid, run.taskUid)
    : undefined;
  if (!task) throw new Error('The run names no approval');
  const feedback = typeof decision.feedback === 'string' ? decision.feedback : '';
  if (feedback.trim() === '' || typeof decision.decided_at !== 'string')
    throw new RunFailure(`Task "${task.title}": the response carries no feedback`, null, task.uid);
  if (task.resolution)
    return {
      task_uid: task.uid,
      revised: false,
      summary: `The approval "${task.title}" was ${task.resolution} before the reminder could be revised; nothing changed`,
    };
  let args: SendEmailArgs;
  try {
    args = readSendEmailArgs(task.toolArgs);
  } catch (error) {
    throw new RunFailure(`Task "${task.title}": ${(error as Error).message}`, null, task.uid);
  }
  const [invoice] = await collections.findInvoices(env.db, run.organizationUid, [args.invoice_uid]);
  if (!invoice)
    throw new RunFailure(
      `The invoice of the reminder in task "${task.title}" no longer exists`,
      null,
      task.uid,
    );
  const by = decision.decided_by?.name || 'a person';
  await step.checkpoint();
  const revised = await reviseEmail(env.db, env.generator, ctx, {
    context_uid: invoice.uid,
    draft: { subject: args.subject, body_text: args.body },
    feedback,
    prompt_hint: agent.instructions ? agent.instructions.slice(0, 4000) : undefined,
  });
  step.addUsage(revised.usage);
  await step.checkpoint();
  const how =
    revised.mode === 'inference'
      ? 'I rewrote the reminder with the language model.'
      : `${revised.error ? `the language model failed (${revised.error}), so` : 'no language model is configured, so'} ` +
        'I added the feedback to the email word for word, as a paragraph before the sign-off; edit the ' +
        'draft if it was meant for me rather than for the client.';
  const result = await env.db.transaction((tx) =>
    reviseApproval(tx, {
      agent,
      taskUid: task.uid,
      toolArgs: { subject: revised.subject, body: revised.body_text },
      answering: { feedback, at: decision.decided_at! },
      summary: how[0]!.toUpperCase() + how.slice(1),
      reasoning: revisedReasoning(task.reasoning, by, feedback, how),
      origin: ctx,
    }),
  );
  const base = { task_uid: task.uid, invoice_uid: invoice.uid, invoice_number: invoice.invoiceNumber };
  if (!result.revised)
    return {
      ...base,
      revised: false,
      summary: `The approval "${task.title}" was ${result.task.resolution ?? 'decided'} before the revised reminder was saved; nothing changed`,
    };
  await notify(
    { db: env.db, chat: env.chat, jobs: env.jobs },
    {
      agent,
      event: 'approval_required',
      text:
        `${agent.name} revised the reminder for invoice ${invoice.invoiceNumber} after ${by}'s feedback and ` +
        `needs approval again: task "${task.title}" (${env.config.publicBaseUrl}/api/work-tasks/${task.uid}) ` +
        `holds the revised draft to ${args.recipients.join(', ')} (subject "${revised.subject}").`,
      runUid: run.uid,
      taskUid: task.uid,
      invoiceUid: invoice.uid,
    },
  );
  return {
    ...base,
    revised: true,
    mode: revised.mode,
    edited_tool_args: result.editedToolArgs,
    discarded_approvals: result.discardedApprovals,
    summary: `Revised the reminder for invoice ${invoice.invoiceNumber} from ${by}'s feedback; it waits for approval again in task "${task.title}"`,
  };
}

/** A follow-up run: act on the person's answer. */
function followUp(env: RunEnv, step: RunStep, ctx: RequestContext): Promise<RunOutcome> {
  const decision = decisionIn(step.run.input);
  switch (decision.action) {
    case 'approve':
      return sendApproved(env, step, ctx);
    case 'reject':
      return recordRejection(env, step, decision);
    case 'respond':
      return reviseReminder(env, step, ctx, decision);
  }
}

/** An email from a client's billing contact: a person takes over the invoices it is about. */
async function handleReply(env: RunEnv, step: RunStep, ctx: RequestContext, now: Date) {
  const trigger = step.run.trigger;
  const from = typeof trigger.from_email === 'string' ? trigger.from_email : '';
  const subject = typeof trigger.subject === 'string' ? trigger.subject : '';
  const conversationUid = typeof trigger.conversation_uid === 'string' ? trigger.conversation_uid : '';
  const party = from ? await findPartyByContactEmail(env.db, step.agent.organizationUid, from) : undefined;
  if (!party || party.role !== 'client') return [];
  const open = await collections.listOverdueReceivables(env.db, step.agent.organizationUid, now, {
    clientPartyUid: party.uid,
    limit: 50,
  });
  const body = typeof step.run.input.body_text === 'string' ? step.run.input.body_text : '';
  const text = `${subject}\n${body}`;
  // "INV-1" is mentioned in "about INV-1." but not in "INV-10".
  const mentions = (number: string) =>
    new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(number)}(?![\\p{L}\\p{N}])`, 'iu').test(text);
  const mentioned = open.filter((i) => mentions(i.invoiceNumber));
  const about = mentioned.length > 0 ? mentioned : open;
  const opened: { task_uid: string; invoice_uid: string }[] = [];
  for (const invoice of about) {
    await step.checkpoint();
    if (step.run.sandbox) {
      opened.push({ task_uid: '', invoice_uid: invoice.uid });
      continue;
    }
    const task = await env.db.transaction(async (tx) => {
      await collections.lockInvoice(tx, step.agent.organizationUid, invoice.uid);
      const existing = await findOpenTasksAbout(
        tx,
        step.agent.organizationUid,
        { entity_type: 'invoice', entity_uid: invoice.uid },
        'task',
      );
      if (existing.some((t) => t.originAgentUid === step.agent.uid)) return null;
      return openTaskForAgent(tx, {
        agent: step.agent,
        title: `Client replied about invoice ${invoice.invoiceNumber}`,
        description:
          `${party.name} (${from}) wrote back about invoice ${invoice.invoiceNumber} in the conversation ` +
          `"${subject}" (conversation ${conversationUid}). Read the reply and follow up; ${step.agent.name} ` +
          `sends no reminder for this invoice while this task is open.`,
        triggerType: step.run.triggerType,
        contextEntities: [{ entity_type: 'invoice', entity_uid: invoice.uid }],
        origin: ctx,
        jobs: env.jobs,
      });
    });
    if (task) opened.push({ task_uid: task.uid, invoice_uid: invoice.uid });
  }
  return opened;
}

async function sweep(env: RunEnv, step: RunStep, ctx: RequestContext, now: Date) {
  const { run, agent } = step;
  const input = run.input;
  const maxInvoices = Math.min(Math.max(Number(input.max_invoices) || 10, 1), 100);
  const minDaysBetween = Math.max(Number(input.min_days_between_reminders ?? 7) || 0, 0);
  const tool = agent.tools.find((t) => t.type === 'send_email');
  const approvals: { task_uid: string | null; invoice_uid: string; tool_args?: SendEmailArgs }[] = [];
  const sent: { invoice_uid: string; draft_uid: string | null; would_send?: SendEmailArgs }[] = [];
  const skipped: Skip[] = [];
  let checked = 0;
  if (!tool) return { checked, approvals, sent, skipped };
  const notifyDeps = { db: env.db, chat: env.chat, jobs: env.jobs };
  // `max_invoices` bounds the invoices acted on: those the agent must leave alone (an approval
  // already open, a reminder sent lately) do not use it up, so newer overdue invoices get their turn.
  for await (const invoice of overdueInvoices(env.db, agent.organizationUid, now)) {
    if (approvals.length + sent.length >= maxInvoices || checked >= MAX_EXAMINED) break;
    checked += 1;
    await step.checkpoint();
    const skip = (reason: string) =>
      skipped.push({ invoice_uid: invoice.uid, invoice_number: invoice.invoiceNumber, reason });
    const waitReason = await reasonToWait(env.db, agent, invoice.uid, minDaysBetween, now);
    if (waitReason) {
      skip(waitReason);
      continue;
    }
    const view = await getInvoice(env.db, ctx, invoice.uid);
    const client = clientOf(view);
    if (!client.email) {
      skip('the client has no billing contact email');
      continue;
    }
    const email = await composeReminder(env, ctx, step, view);
    const toolArgs: SendEmailArgs = {
      type: 'send_email',
      subject: email.subject,
      body: email.body,
      recipients: [client.email],
      invoice_uid: invoice.uid,
    };
    const facts =
      `Invoice ${view.invoice_number} for ${client.name} is ${view.overdue_days} day(s) overdue with ` +
      `${amountLeft(view)} outstanding` +
      (view.due_date ? ` (due ${formatLongDate(view.due_date)})` : '');

    if (tool.requires_approval !== false) {
      if (run.sandbox) {
        approvals.push({ task_uid: null, invoice_uid: invoice.uid, tool_args: toolArgs });
        continue;
      }
      const title = `Send payment reminder for invoice ${view.invoice_number}`;
      const task = await env.db.transaction(async (tx) => {
        // Under the invoice's lock, so two runs at once still raise one approval.
        await collections.lockInvoice(tx, agent.organizationUid, invoice.uid);
        if (await reasonToWait(tx, agent, invoice.uid, minDaysBetween, now)) return null;
        return raiseApproval(tx, {
          agent,
          title,
          reasoning:
            `${facts}. I wrote a ${email.mode === 'inference' ? 'reminder with the language model' : 'reminder from the template'} to ${client.email}` +
            (email.policy.length > 0
              ? `, with the organization's policy from ${email.policy.join(' and ')}`
              : '') +
            '; approve to send it, edit tool_args to change it, or reject.',
          toolArgs: { ...toolArgs },
          trigger: run.trigger,
          priority: view.overdue_days > 60 ? 'high' : 'medium',
          contextEntities: [{ entity_type: 'invoice', entity_uid: invoice.uid }],
          runUid: run.uid,
          origin: ctx,
          jobs: env.jobs,
        });
      });
      if (!task) {
        skip('an approval for this invoice is already open');
        continue;
      }
      approvals.push({ task_uid: task.uid, invoice_uid: invoice.uid });
      await notify(notifyDeps, {
        agent,
        event: 'approval_required',
        text: `${agent.name} needs approval: ${facts}. Task "${title}" (${env.config.publicBaseUrl}/app/inbox/${task.uid}) holds the reminder to ${client.email}.`,
        runUid: run.uid,
        taskUid: task.uid,
        invoiceUid: invoice.uid,
      });
    } else {
      if (run.sandbox) {
        sent.push({ invoice_uid: invoice.uid, draft_uid: null, would_send: toolArgs });
        continue;
      }
      const draft = await sendReminder(env, ctx, { ...toolArgs, partyUid: view.parties.client?.uid ?? null });
      sent.push({ invoice_uid: invoice.uid, draft_uid: draft.uid });
      await notify(notifyDeps, {
        agent,
        event: 'action_taken',
        text: `${agent.name} sent a payment reminder: ${facts}. Sent to ${client.email} (subject "${email.subject}").`,
        runUid: run.uid,
        invoiceUid: invoice.uid,
      });
    }
  }
  return { checked, approvals, sent, skipped };
}

/** The organization's overdue receivables, oldest due date first, read a batch at a time. */
async function* overdueInvoices(db: DbOrTx, organizationUid: string, now: Date) {
  let after: collections.CollectibleInvoice | undefined;
  for (;;) {
    const batch = await collections.listOverdueReceivables(db, organizationUid, now, {
      limit: BATCH,
      ...(after ? { after } : {}),
    });
    yield* batch;
    if (batch.length < BATCH) return;
    after = batch[batch.length - 1];
  }
}

async function runCollections(env: RunEnv, step: RunStep): Promise<RunOutcome> {
  const { run, agent } = step;
  const ctx = await systemContext(
    env.db,
    run.organizationUid,
    {
      uid: agent.createdByUid ?? agent.uid,
      name: agent.name,
      // What the run changes is the run's doing; a person stands behind it when one asked for it (a
      // manual run, or the approval a follow-up run carries out).
      auditActor: { type: 'agent_run', uid: run.uid, userUid: run.requestedByUid ?? null },
    },
    `run:${run.uid}`,
  );
  if (run.triggerType === 'approval') return followUp(env, step, ctx);
  const now = new Date();
  const replyTasks = run.triggerType === 'email_received' ? await handleReply(env, step, ctx, now) : [];
  const result = await sweep(env, step, ctx, now);
  const prefix = run.sandbox ? 'Sandbox (nothing sent, no approval raised): ' : '';
  const parts = [
    `${result.checked} overdue invoice(s) checked`,
    `${result.approvals.length} approval(s) ${run.sandbox ? 'would be ' : ''}requested`,
    `${result.sent.length} reminder(s) ${run.sandbox ? 'would be ' : ''}sent`,
    `${result.skipped.length} skipped`,
    ...(replyTasks.length > 0 ? [`${replyTasks.length} reply task(s) opened`] : []),
  ];
  return {
    summary: prefix + parts.join(', '),
    checked: result.checked,
    approvals: result.approvals,
    sent: result.sent,
    skipped: result.skipped,
    reply_tasks: replyTasks,
  };
}

/**
 * Makes the built-in collections agent runnable: its executor, and the check before an approval's
 * follow-up run. Called once by the composition root (src/app.ts), for the API and the workers alike.
 */
export function installCollectionsAgent(): void {
  registerExecutor(COLLECTIONS_AGENT_TYPE, runCollections);
  // Only an approval sends anything; a rejection or a response needs no account.
  registerFollowUpCheck(COLLECTIONS_AGENT_TYPE, async (tx, agent, action) =>
    action !== 'approve' || (await collections.firstEmailAccount(tx, agent.organizationUid))
      ? null
      : 'the organization has no email account to send the reminder from',
  );
}
