// The draft as the API answers it; in a file of its own so that the sender (email-sending.ts), which
// the drafts service imports, can show it too without an import cycle.
import type { EmailDraftRow } from './email-drafts.repository.ts';

/** Interface 2.10 (+ `sent_at`, `error`, `message_id`); attachments are request only. */
export function toDraftView(row: EmailDraftRow) {
  return {
    uid: row.uid,
    from_account_id: row.fromAccountUid,
    from_email: row.fromEmail,
    to: row.to,
    cc: row.cc,
    bcc: row.bcc,
    subject: row.subject,
    body_text: row.bodyText,
    body_html: row.bodyHtml,
    context_type: row.contextType,
    context_id: row.contextId,
    planned_send_at: row.plannedSendAt?.toISOString() ?? null,
    status: row.status,
    sent_at: row.sentAt?.toISOString() ?? null,
    error: row.error,
    message_id: row.messageId,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
export type EmailDraftView = ReturnType<typeof toDraftView>;
