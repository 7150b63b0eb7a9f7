import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { notFound, validationFailed } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { listActiveAgentsWithTrigger } from '../agents/agents.service.ts';
import { requestRun } from '../agents/agent-runs.service.ts';
import * as repo from './conversations.repository.ts';
import type {
  CreateConversationBodyT,
  CreateMessageBodyT,
  InboundEmailBodyT,
} from './conversations.schemas.ts';

export function toMessageView(row: repo.MessageRow) {
  return {
    uid: row.uid,
    conversation_uid: row.conversationUid,
    direction: row.direction,
    subject: row.subject,
    from_email: row.fromEmail,
    to: row.to,
    body_text: row.bodyText,
    message_id: row.messageId,
    in_reply_to: row.inReplyTo,
    created_at: row.createdAt,
  };
}

export function toConversationView(row: repo.ConversationRow, messages?: repo.MessageRow[]) {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    subject: row.subject,
    channel: row.channel,
    status: row.status,
    party_uid: row.partyUid,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    ...(messages ? { messages: messages.map(toMessageView) } : {}),
  };
}

/** `Re:`, `Fwd:` and friends (any number, any case) and surrounding space, so replies share a thread. */
export function normalizeSubject(subject: string): string {
  return subject.replace(/^\s*((re|fwd?|aw|wg|sv|antw)\s*(\[\d+\])?\s*:\s*)+/i, '').trim();
}

/** `<id@host>` and `id@host` name the same message. */
export function normalizeMessageId(id: string): string {
  return id.trim().replace(/^<|>$/g, '').trim();
}

export async function createConversation(db: Db, ctx: RequestContext, body: CreateConversationBodyT) {
  const org = ctx.organizationUid;
  if (body.party_uid && !(await repo.partyExists(db, org, body.party_uid)))
    throw validationFailed('party_uid', 'No party of this organization has that uid');
  const row = await repo.insertConversation(db, {
    organizationUid: org,
    subject: body.subject,
    channel: body.channel,
    status: body.status ?? 'open',
    partyUid: body.party_uid ?? null,
  });
  return toConversationView(row, []);
}

export async function getConversation(db: Db, ctx: RequestContext, uid: string) {
  const row = await repo.findConversation(db, memberOrganizationUids(ctx), uid);
  if (!row) throw notFound('Conversation');
  return toConversationView(row, await repo.listMessages(db, row.organizationUid, row.uid));
}

export async function listConversations(
  db: Db,
  ctx: RequestContext,
  filters: { status?: string | undefined; partyUid?: string | undefined },
  page: PageRequest,
) {
  const { rows, total } = await repo.listConversations(db, ctx.organizationUid, {
    ...filters,
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map((r) => toConversationView(r)), total };
}

export async function addMessage(
  db: Db,
  ctx: RequestContext,
  conversationUid: string,
  body: CreateMessageBodyT,
) {
  const conversation = await repo.findConversation(db, memberOrganizationUids(ctx), conversationUid);
  if (!conversation) throw notFound('Conversation');
  const row = await repo.insertMessage(db, {
    organizationUid: conversation.organizationUid,
    conversationUid: conversation.uid,
    direction: body.direction ?? 'outbound',
    subject: body.subject,
    fromEmail: body.from_email.toLowerCase(),
    to: body.to.map((a) => a.toLowerCase()),
    bodyText: body.body_text,
  });
  return toMessageView(row);
}

/**
 * Inbound mail (CONTRACT §4): threaded by `In-Reply-To`, else by subject (without `Re:`) and sender,
 * else a new email conversation with the sender's party; then every active agent with an
 * `email_received` trigger gets a run. One transaction: the message and its runs exist together.
 */
export async function receiveInboundEmail(db: Db, jobs: Jobs, ctx: RequestContext, body: InboundEmailBodyT) {
  const org = ctx.organizationUid;
  const from = body.from_email.trim().toLowerCase();
  const subject = normalizeSubject(body.subject);
  return db.transaction(async (tx) => {
    let threadedBy = 'new';
    let conversation = body.in_reply_to
      ? await repo.findConversationByMessageId(tx, org, normalizeMessageId(body.in_reply_to))
      : undefined;
    if (conversation) threadedBy = 'in_reply_to';
    else {
      conversation = await repo.findConversationBySubjectAndAddress(tx, org, subject, from);
      if (conversation) threadedBy = 'subject_and_sender';
    }
    if (!conversation) {
      const party = await repo.findPartyByContactEmail(tx, org, from);
      conversation = await repo.insertConversation(tx, {
        organizationUid: org,
        subject,
        channel: 'email',
        status: 'open',
        partyUid: party?.uid ?? null,
      });
    }
    const message = await repo.insertMessage(tx, {
      organizationUid: org,
      conversationUid: conversation.uid,
      direction: 'inbound',
      subject: body.subject,
      fromEmail: from,
      to: body.to.map((a) => a.toLowerCase()),
      bodyText: body.body_text,
      messageId: body.message_id ? normalizeMessageId(body.message_id) : null,
      inReplyTo: body.in_reply_to ? normalizeMessageId(body.in_reply_to) : null,
    });
    const trigger = {
      type: 'email_received',
      from_email: from,
      subject: body.subject,
      conversation_uid: conversation.uid,
      message_uid: message.uid,
    };
    const runUids: string[] = [];
    for (const agent of await listActiveAgentsWithTrigger(tx, org, 'email_received')) {
      const run = await requestRun(tx, jobs, {
        agent,
        triggerType: 'email_received',
        trigger,
        // The agent reads the message itself (the collections agent looks for invoice numbers in it).
        input: { ...trigger, body_text: body.body_text.slice(0, 20_000) },
      });
      runUids.push(run.uid);
    }
    return {
      conversation_uid: conversation.uid,
      message_uid: message.uid,
      threaded_by: threadedBy,
      run_uids: runUids,
    };
  });
}

/** The party whose billing contact writes from this address (clients first). */
export async function findPartyByContactEmail(db: DbOrTx, organizationUid: string, email: string) {
  return repo.findPartyByContactEmail(db, organizationUid, email.trim().toLowerCase());
}

/**
 * An email the service sent (the collections agent's reminders), kept as an outbound message so the
 * client's reply threads into the same conversation by `In-Reply-To`.
 */
export async function recordOutboundEmail(
  db: DbOrTx,
  organizationUid: string,
  email: {
    partyUid: string | null;
    subject: string;
    fromEmail: string;
    to: string[];
    bodyText: string;
    messageId: string | null;
  },
) {
  const subject = normalizeSubject(email.subject);
  const to = email.to.map((a) => a.toLowerCase());
  const conversation =
    (to[0]
      ? await repo.findConversationBySubjectAndAddress(db, organizationUid, subject, to[0])
      : undefined) ??
    (await repo.insertConversation(db, {
      organizationUid,
      subject,
      channel: 'email',
      status: 'open',
      partyUid: email.partyUid,
    }));
  return repo.insertMessage(db, {
    organizationUid,
    conversationUid: conversation.uid,
    direction: 'outbound',
    subject: email.subject,
    fromEmail: email.fromEmail.toLowerCase(),
    to,
    bodyText: email.bodyText,
    messageId: email.messageId ? normalizeMessageId(email.messageId) : null,
  });
}
