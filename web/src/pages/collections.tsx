import { Ago } from '../components/ago.tsx';
import { useState, type FormEvent } from 'react';
import {
  COLLECTION_DEFAULTS,
  COLLECTION_TABS,
  emailsGeneration,
  readCollectionFilters,
  TAB_LABELS,
  TAB_NOTES,
  tabQuery,
  type CollectionFilters,
  type CollectionTab,
} from '../collections.ts';
import { FilterActions, ListStates, Pager, TableBox } from '../components/list-parts.tsx';
import { useDocumentTitle } from '../components/states.tsx';
import { formatDateTime } from '../format.ts';
import { writeQuery } from '../list-query.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';
import { AboutCell, EmailStatusPill, recipientsText, type EmailDraft } from '../components/email-parts.tsx';

const PER_PAGE = 25;
const tabPath = (tab: CollectionTab) => `/app/collections/${tab}`;

/** The column that says when, per tab: the change, the planned time, the time it went. */
const WHEN_LABELS: Record<CollectionTab, string> = {
  drafts: 'Last change',
  scheduled: 'Sends',
  sent: 'Sent',
  canceled: 'Canceled',
};

/**
 * Collections email: Drafts, Scheduled, Sent and Canceled, one tab (and one address) each, over
 * `GET /api/email/drafts`; a search and the page in the address bar.
 */
export default function CollectionsPage({ tab }: { tab: CollectionTab }) {
  const { client, organization } = useSignedIn();
  const { search } = useLocation();
  const filters = readCollectionFilters(search);
  const query = writeQuery(filters, COLLECTION_DEFAULTS);
  const [attempt, setAttempt] = useState(0);
  useDocumentTitle(`${TAB_LABELS[tab]} · Collections`);
  const go = (next: CollectionFilters) => navigate(`${tabPath(tab)}${writeQuery(next, COLLECTION_DEFAULTS)}`);
  const list = useResource(
    `emails:${organization.organization_uid}:${tab}${query}:${attempt}:${emailsGeneration()}`,
    async () =>
      (
        await client.GET('/api/email/drafts', {
          params: {
            query: {
              ...tabQuery(tab),
              ...(filters.q ? { q: filters.q } : {}),
              page: filters.page,
              per_page: PER_PAGE,
              organization_uid: organization.organization_uid,
            },
          },
        })
      ).data,
  );

  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const q = String(new FormData(event.currentTarget).get('q') ?? '').trim();
    go({ q, page: 1 });
  };
  const filtered = filters.q !== '';

  return (
    <div className="page page-wide">
      <h1>Collections</h1>
      <nav className="tabs email-tabs" aria-label="Emails">
        {COLLECTION_TABS.map((t) => (
          <Link key={t} to={tabPath(t)} aria-current={t === tab ? 'page' : undefined}>
            {TAB_LABELS[t]}
          </Link>
        ))}
      </nav>
      <p className="muted">{TAB_NOTES[tab]}</p>
      <form
        key={query}
        className="filters email-filters"
        onSubmit={apply}
        role="search"
        aria-label="Search emails"
      >
        <div className="field">
          <label htmlFor="e-q">Search</label>
          <input
            id="e-q"
            name="q"
            type="search"
            defaultValue={filters.q}
            placeholder="Subject or recipient"
            maxLength={200}
          />
        </div>
        <FilterActions filtered={filtered} clearTo={tabPath(tab)} />
      </form>

      <ListStates
        list={list}
        noun="emails"
        emptyTitle={filtered ? 'No email matches this search' : `No ${TAB_LABELS[tab].toLowerCase()} emails`}
        filtered={filtered}
        clearTo={tabPath(tab)}
        onRetry={() => setAttempt((n) => n + 1)}
      />
      {list.status === 'ready' && list.data.items.length > 0 && (
        <>
          <TableBox label={`${TAB_LABELS[tab]} emails`}>
            <table className="data-table emails-table">
              <thead>
                <tr>
                  <th scope="col">Subject</th>
                  <th scope="col">To</th>
                  <th scope="col">Status</th>
                  <th scope="col">{WHEN_LABELS[tab]}</th>
                  <th scope="col">About</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((email) => (
                  <tr key={email.uid}>
                    <td className="wrap">
                      <Link to={`/app/collections/${email.uid}`}>{email.subject || '(no subject)'}</Link>
                      {email.status === 'failed' && email.error && (
                        <span className="cell-note email-error">{email.error}</span>
                      )}
                    </td>
                    <td className="wrap">{recipientsText(email)}</td>
                    <td>
                      <EmailStatusPill email={email} />
                    </td>
                    <td>
                      <When email={email} tab={tab} />
                    </td>
                    <td>
                      <AboutCell email={email} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableBox>
          <Pager
            meta={list.data._meta}
            noun={list.data._meta.total_items === 1 ? 'email' : 'emails'}
            hrefOf={(page) => `${tabPath(tab)}${writeQuery({ ...filters, page }, COLLECTION_DEFAULTS)}`}
          />
        </>
      )}
    </div>
  );
}

function When({ email, tab }: { email: EmailDraft; tab: CollectionTab }) {
  const at = tab === 'scheduled' ? email.planned_send_at : tab === 'sent' ? email.sent_at : email.updated_at;
  if (!at) return <span className="muted">{email.status === 'sending' ? 'Sending now' : '—'}</span>;
  // Future times (a planned send) as the date and time; past ones as "5 minutes ago", the time on hover.
  if (tab === 'scheduled') return <time dateTime={at}>{formatDateTime(at)}</time>;
  return <Ago at={at} />;
}
