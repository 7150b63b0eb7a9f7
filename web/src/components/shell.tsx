import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { useApprovals } from '../approvals.tsx';
import { problemOf } from '../api.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { SearchPalette } from './search-palette.tsx';

/** The frame of every signed-in page: the organization, the navigation with its counts, the person. */
export function Shell({ children }: { children: ReactNode }) {
  const { organization, memberships, chooseOrganization } = useSignedIn();
  const { total, status } = useApprovals();
  const { path } = useLocation();
  const inInbox = path === '' || path === '/inbox' || path.startsWith('/inbox/');
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/app/inbox" className="brand">
          Remit
        </Link>
        {memberships.length > 1 ? (
          <span className="organization">
            <label className="visually-hidden" htmlFor="organization-select">
              Organization
            </label>
            <select
              id="organization-select"
              value={organization.organization_uid}
              onChange={(event) => {
                chooseOrganization(event.target.value);
                navigate('/app/inbox');
              }}
            >
              {memberships.map((m) => (
                <option key={m.organization_uid} value={m.organization_uid}>
                  {m.organization_name}
                </option>
              ))}
            </select>
          </span>
        ) : (
          <span className="organization">{organization.organization_name}</span>
        )}
        <nav aria-label="Main" className="nav">
          <Link to="/app/inbox" aria-current={inInbox ? 'page' : undefined}>
            Approvals
            {status === 'ready' && (
              <span className="badge" data-testid="pending-count">
                <span className="visually-hidden">, </span>
                {total}
                <span className="visually-hidden"> pending</span>
              </span>
            )}
          </Link>
          <Link to="/app/invoices" aria-current={path.startsWith('/invoices') ? 'page' : undefined}>
            Invoices
          </Link>
          <Link to="/app/tasks" aria-current={path.startsWith('/tasks') ? 'page' : undefined}>
            Tasks
          </Link>
          <Link to="/app/collections" aria-current={path.startsWith('/collections') ? 'page' : undefined}>
            Collections
          </Link>
          <Link to="/app/agents" aria-current={path.startsWith('/agents') ? 'page' : undefined}>
            Agents
          </Link>
          <Link to="/app/knowledge" aria-current={path === '/knowledge' ? 'page' : undefined}>
            Knowledge
          </Link>
          <Link to="/app/metrics" aria-current={path === '/metrics' ? 'page' : undefined}>
            Metrics
          </Link>
          <Link to="/app/settings" aria-current={path.startsWith('/settings') ? 'page' : undefined}>
            Settings
          </Link>
        </nav>
        <SearchPalette />
        <UserMenu />
      </header>
      <main id="main" className="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

function UserMenu() {
  const { user, organization, signOut } = useSignedIn();
  const [open, setOpen] = useState(false);
  const [problem, setProblem] = useState<string>();
  const menuId = useId();
  const button = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!open) return;
    const close = (event: MouseEvent | FocusEvent) => {
      const target = event.target as Node | null;
      if (target && (panel.current?.contains(target) || button.current?.contains(target))) return;
      setOpen(false);
    };
    const escape = (event: KeyboardEvent) => {
      if (event.key !== 'Escape') return;
      setOpen(false);
      button.current?.focus();
    };
    document.addEventListener('mousedown', close);
    document.addEventListener('focusin', close);
    document.addEventListener('keydown', escape);
    return () => {
      document.removeEventListener('mousedown', close);
      document.removeEventListener('focusin', close);
      document.removeEventListener('keydown', escape);
    };
  }, [open]);

  const initials = (user.full_name || user.email)
    .split(/\s+/)
    .map((word) => word[0])
    .join('')
    .slice(0, 2)
    .toUpperCase();
  return (
    <div className="user-menu">
      <button
        ref={button}
        type="button"
        className="avatar-button"
        aria-expanded={open}
        aria-controls={menuId}
        onClick={() => setOpen((o) => !o)}
      >
        <span className="avatar" aria-hidden="true">
          {initials}
        </span>
        <span className="visually-hidden">Account: {user.full_name || user.email}</span>
      </button>
      <div ref={panel} id={menuId} className="user-panel" hidden={!open}>
        <p className="user-name">{user.full_name}</p>
        <p className="user-email">{user.email}</p>
        <p className="user-role">
          {organization.role === 'admin' ? 'Admin' : 'Member'} of {organization.organization_name}
        </p>
        {problem && (
          <p className="field-error" role="alert">
            {problem}
          </p>
        )}
        <button
          type="button"
          className="button"
          onClick={() => {
            signOut().then(
              () => navigate('/app/sign-in'),
              (error: unknown) => setProblem(problemOf(error)),
            );
          }}
        >
          Sign out
        </button>
      </div>
    </div>
  );
}
