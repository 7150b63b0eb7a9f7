import { lazy, Suspense, useEffect, type ComponentType, type LazyExoticComponent } from 'react';
import { Loading } from '../../components/states.tsx';
import { Link, navigate } from '../../router.tsx';
import { useSignedIn } from '../../session.tsx';
import './settings.css';

interface Section {
  /** The last segment of the address: `/app/settings/<id>`. */
  id: string;
  label: string;
  /** Shown to admins only: the API refuses these to members (docs/authentication.md). */
  adminOnly: boolean;
  page: LazyExoticComponent<ComponentType>;
}

/** Each section is a page of its own, loaded on first use. The first one a person may see is the default. */
const SECTIONS: Section[] = [
  { id: 'account', label: 'Your account', adminOnly: false, page: lazy(() => import('./account.tsx')) },
  { id: 'keys', label: 'API keys', adminOnly: false, page: lazy(() => import('./keys.tsx')) },
  { id: 'members', label: 'Members', adminOnly: true, page: lazy(() => import('./members.tsx')) },
  // Members read the organization's settings, its email accounts and its Slack channel, and change
  // none of them (PATCH settings, POST email accounts: admins); the billing integration is admins' only,
  // to read as well (docs/authentication.md).
  {
    id: 'organization',
    label: 'Organization',
    adminOnly: false,
    page: lazy(() => import('./organization.tsx')),
  },
  { id: 'email', label: 'Email accounts', adminOnly: false, page: lazy(() => import('./email.tsx')) },
  { id: 'billing', label: 'Billing integration', adminOnly: true, page: lazy(() => import('./billing.tsx')) },
  { id: 'slack', label: 'Slack', adminOnly: false, page: lazy(() => import('./slack.tsx')) },
];

/** `/app/settings/<section>`: the settings' own navigation beside the section. */
export default function SettingsPage({ section }: { section: string | undefined }) {
  const { organization } = useSignedIn();
  const isAdmin = organization.role === 'admin';
  const visible = SECTIONS.filter((s) => isAdmin || !s.adminOnly);
  const current = visible.find((s) => s.id === section);
  useEffect(() => {
    if (!current && visible[0]) navigate(`/app/settings/${visible[0].id}`, { replace: true });
  }, [current, visible]);
  const Page = current?.page;
  return (
    <div className="page page-wide settings">
      <nav aria-label="Settings" className="settings-nav">
        <ul>
          {visible.map((s) => (
            <li key={s.id}>
              <Link to={`/app/settings/${s.id}`} aria-current={s === current ? 'page' : undefined}>
                {s.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <div className="settings-section">
        {Page ? (
          <Suspense fallback={<Loading label="Loading…" />}>
            <Page />
          </Suspense>
        ) : (
          <Loading label="Loading…" />
        )}
      </div>
    </div>
  );
}
