import type { components } from '@remit/client';
import { statusLabel } from '../collections.ts';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';
import '../pages/collections.css';

/** Pieces the Collections pages and an invoice's Emails section share. */
export type EmailDraft = components['schemas']['EmailDraft'];

/** `ap@globex.test +2`: the first recipient and how many more (cc and bcc included). */
export function recipientsText(email: Pick<EmailDraft, 'to' | 'cc' | 'bcc'>): string {
  const all = [...email.to, ...email.cc, ...email.bcc];
  if (all.length === 0) return 'No recipient yet';
  return all.length === 1 ? all[0]! : `${all[0]} +${all.length - 1}`;
}

export function EmailStatusPill({ email }: { email: Pick<EmailDraft, 'status' | 'planned_send_at'> }) {
  const label = statusLabel(email);
  return <span className={`status-pill email-status-${label.toLowerCase()}`}>{label}</span>;
}

/** What the email is about: an invoice links to its page, by its number when the person may see it. */
export function AboutCell({ email }: { email: Pick<EmailDraft, 'context_type' | 'context_id'> }) {
  if (email.context_type === 'invoice' && email.context_id) return <InvoiceLink uid={email.context_id} />;
  if (email.context_type) return <span className="muted">{email.context_type}</span>;
  return <span className="muted">—</span>;
}

/**
 * A link to an invoice, named by its number (one `GET /api/invoices/{uid}` per invoice, shared and
 * kept for 30 s): the email record carries only the invoice's uid.
 */
export function InvoiceLink({ uid }: { uid: string }) {
  const { client, organization } = useSignedIn();
  const invoice = useResource(
    `invoice-number:${uid}`,
    async () =>
      (
        await client.GET('/api/invoices/{uid}', {
          params: { path: { uid }, query: { organization_uid: organization.organization_uid } },
        })
      ).data,
  );
  const name =
    invoice.status === 'ready'
      ? `Invoice ${invoice.data.invoice_number}`
      : invoice.status === 'error' && invoice.code === 'not_found'
        ? 'An invoice you may not see'
        : 'Invoice';
  return <Link to={`/app/invoices/${uid}`}>{name}</Link>;
}
