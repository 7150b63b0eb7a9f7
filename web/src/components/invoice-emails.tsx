import { emailsGeneration } from '../collections.ts';
import { formatAgo, formatDateTime } from '../format.ts';
import { EmailStatusPill, recipientsText } from './email-parts.tsx';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';

/**
 * An invoice's emails (`GET /api/email/drafts?context_type=invoice&context_id=…`), newest change first,
 * each linking to its page in Collections. The first 10; the count says when there are more.
 */
export function InvoiceEmails({ invoiceUid }: { invoiceUid: string }) {
  const { client, organization } = useSignedIn();
  const emails = useResource(
    `invoice-emails:${invoiceUid}:${emailsGeneration()}`,
    async () =>
      (
        await client.GET('/api/email/drafts', {
          params: {
            query: {
              context_type: 'invoice',
              context_id: invoiceUid,
              per_page: 10,
              organization_uid: organization.organization_uid,
            },
          },
        })
      ).data,
  );
  return (
    <section className="panel invoice-emails" aria-labelledby="emails-heading">
      <h2 id="emails-heading">Emails</h2>
      {emails.status === 'loading' && <p className="muted">Loading the emails…</p>}
      {emails.status === 'error' && (
        <p className="form-problem">The emails could not be loaded: {emails.message}</p>
      )}
      {emails.status === 'ready' &&
        (emails.data.items.length === 0 ? (
          <p className="muted">No email about this invoice yet.</p>
        ) : (
          <>
            <ul>
              {emails.data.items.map((email) => {
                const at = email.sent_at ?? email.updated_at;
                return (
                  <li key={email.uid}>
                    <Link to={`/app/collections/${email.uid}`}>{email.subject || '(no subject)'}</Link>
                    <EmailStatusPill email={email} />
                    <span className="muted">to {recipientsText(email)}</span>
                    <time className="muted" dateTime={at} title={formatDateTime(at)}>
                      {formatAgo(at)}
                    </time>
                  </li>
                );
              })}
            </ul>
            {emails.data._meta.total_items > emails.data.items.length && (
              <p className="muted">
                The newest {emails.data.items.length} of {emails.data._meta.total_items}.
              </p>
            )}
          </>
        ))}
    </section>
  );
}
