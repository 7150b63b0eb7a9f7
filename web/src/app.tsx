import { lazy, Suspense, useEffect, type ComponentType, type ReactNode } from 'react';
import { ApprovalsProvider } from './approvals.tsx';
import { Shell } from './components/shell.tsx';
import { Empty, Loading, Problem, useDocumentTitle } from './components/states.tsx';
import { AcceptInvitationPage } from './pages/accept-invitation.tsx';
import { InboxPage } from './pages/inbox.tsx';
import { ForgotPasswordPage, ResetPasswordPage } from './pages/password-reset.tsx';
import { SignInLinkPage } from './pages/sign-in-link.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { Link, navigate, useLocation } from './router.tsx';
import { SessionProvider, useSession } from './session.tsx';
import type { CollectionTab } from './collections.ts';

// The work pages load on first use, so the inbox's first load stays small (docs/console.md#size).
const InvoicesPage = lazy(() => import('./pages/invoices.tsx'));
const InvoicePage = lazy(() => import('./pages/invoice.tsx'));
const TasksPage = lazy(() => import('./pages/tasks.tsx'));
const TaskPage = lazy(() => import('./pages/task.tsx'));
const KnowledgePage = lazy(() => import('./pages/knowledge.tsx').then((m) => ({ default: m.KnowledgePage })));
const MetricsPage = lazy(() => import('./pages/metrics.tsx'));
const SettingsPage = lazy(() => import('./pages/settings/settings.tsx'));
const AgentsPage = lazy(() => import('./pages/agents.tsx'));
const AgentPage = lazy(() => import('./pages/agent.tsx'));
const AgentRunPage = lazy(() => import('./pages/agent-run.tsx'));
const CollectionsPage = lazy(() => import('./pages/collections.tsx'));
const EmailDraftPage = lazy(() => import('./pages/email-draft.tsx'));
const ApprovalLinkPage = lazy(() => import('./pages/approval-link.tsx'));

const UID = '([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})';

/** Pages anyone may open: signing in, and the pages Remit's emails link to. */
const PUBLIC_PAGES: Record<string, ComponentType> = {
  '/sign-in': SignInPage,
  '/forgot-password': ForgotPasswordPage,
  '/reset-password': ResetPasswordPage,
  '/accept-invitation': AcceptInvitationPage,
  '/sign-in-link': SignInLinkPage,
  '/approval': ApprovalLinkPage,
};

export function App() {
  return (
    <SessionProvider>
      <Pages />
    </SessionProvider>
  );
}

function Pages() {
  const { path } = useLocation();
  const { session } = useSession();
  const Public = PUBLIC_PAGES[path];
  // Suspense: a public page may load lazily (the approval link's).
  if (Public) return <LazyPage page={<Public />} />;
  if (session.status === 'loading') {
    return (
      <main className="auth" id="main">
        <Loading label="Loading…" />
      </main>
    );
  }
  if (session.status === 'error') {
    return (
      <main className="auth" id="main">
        <h1 className="visually-hidden">Remit</h1>
        <Problem title="The console could not start" message={session.message} onRetry={session.retry} />
      </main>
    );
  }
  if (session.status === 'signed-out') return <ToSignIn path={path} />;
  return (
    <ApprovalsProvider key={session.organization.organization_uid}>
      <Shell>
        <SignedInPage path={path} />
      </Shell>
    </ApprovalsProvider>
  );
}

function ToSignIn({ path }: { path: string }) {
  useEffect(() => {
    const here = `/app${path}${window.location.search}`;
    navigate(
      path === '' || path === '/inbox' ? '/app/sign-in' : `/app/sign-in?next=${encodeURIComponent(here)}`,
      {
        replace: true,
      },
    );
  }, [path]);
  return null;
}

function SignedInPage({ path }: { path: string }) {
  if (path === '' || path === '/inbox') return <InboxPage uid={undefined} />;
  const task = /^\/inbox\/([0-9a-f-]{36})$/i.exec(path);
  if (task) return <InboxPage uid={task[1]} />;
  const work = workPage(path);
  if (work) return <LazyPage page={work} />;
  if (path === '/knowledge') return <LazyPage page={<KnowledgePage />} />;
  if (path === '/metrics') return <LazyPage page={<MetricsPage />} />;
  const agents = agentsPage(path);
  if (agents) return <LazyPage page={agents} />;
  const collections = collectionsPage(path);
  if (collections) return <LazyPage page={collections} />;
  const settings = /^\/settings(?:\/([a-z-]+))?$/.exec(path);
  if (settings) return <LazyPage page={<SettingsPage section={settings[1]} />} />;
  return <NotFound />;
}

function LazyPage({ page }: { page: ReactNode }) {
  return <Suspense fallback={<Loading label="Loading…" />}>{page}</Suspense>;
}

function workPage(path: string) {
  if (path === '/invoices' || path === '/invoices/receivable') return <InvoicesPage kind="receivable" />;
  if (path === '/invoices/payable') return <InvoicesPage kind="payable" />;
  const invoice = new RegExp(`^/invoices/${UID}$`, 'i').exec(path);
  if (invoice) return <InvoicePage uid={invoice[1]!} />;
  if (path === '/tasks') return <TasksPage />;
  const task = new RegExp(`^/tasks/${UID}$`, 'i').exec(path);
  if (task) return <TaskPage uid={task[1]!} />;
  return null;
}

function agentsPage(path: string) {
  if (path === '/agents') return <AgentsPage />;
  const agent = new RegExp(`^/agents/${UID}$`, 'i').exec(path);
  if (agent) return <AgentPage key={agent[1]} uid={agent[1]!} />;
  const run = new RegExp(`^/agents/${UID}/runs/${UID}$`, 'i').exec(path);
  if (run) return <AgentRunPage key={run[2]} agentUid={run[1]!} runUid={run[2]!} />;
  return null;
}

function collectionsPage(path: string) {
  if (path === '/collections') return <CollectionsPage tab="drafts" />;
  const tab = /^\/collections\/(drafts|scheduled|sent|canceled)$/.exec(path);
  if (tab) return <CollectionsPage tab={tab[1] as CollectionTab} />;
  const email = new RegExp(`^/collections/${UID}$`, 'i').exec(path);
  // Keyed: another email's page starts afresh (its notices, its edit mode).
  if (email) return <EmailDraftPage key={email[1]} uid={email[1]!} />;
  return null;
}

function NotFound() {
  useDocumentTitle('Page not found');
  return (
    <div className="page">
      <h1>Page not found</h1>
      <Empty title="There is no such page in the console.">
        <p>
          <Link to="/app/inbox">Go to the approvals</Link>
        </p>
      </Empty>
    </div>
  );
}
