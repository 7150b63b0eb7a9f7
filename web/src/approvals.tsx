import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from 'react';
import { codeOf, problemOf, type RemitClient, type WorkTask } from './api.ts';
import { useSignedIn } from './session.tsx';

/** How often the pending approvals are asked for again (the issue asks for at most 5 s). */
export const POLL_INTERVAL_MS = 4_000;
const PAGE_SIZE = 50;

/** An approval that left the pending list, and how: decided here, elsewhere, or gone. */
export interface Departure {
  task: WorkTask;
  /**
   * `mine`: decided on this page; `elsewhere`: another person or tab decided it (seen by the poll);
   * `conflict`: decided first by someone else while this page was deciding it; `gone`: deleted.
   */
  how: 'mine' | 'elsewhere' | 'conflict' | 'gone';
  at: number;
}

export interface ApprovalsState {
  status: 'loading' | 'ready' | 'error';
  /** Pending approvals, newest first. */
  items: WorkTask[];
  /** All pending approvals of the organization (the list shows the first page). */
  total: number;
  /** The last refresh's problem, while the previous list stays shown. */
  problem: string | undefined;
  departures: Departure[];
  refresh(): Promise<void>;
  /** Records a decision made on this page (or one found already made), and refreshes the list. */
  settle(task: WorkTask, how: Departure['how']): void;
  dismiss(uid: string): void;
}

const ApprovalsContext = createContext<ApprovalsState | null>(null);

async function pendingApprovals(client: RemitClient, organizationUid: string) {
  const { data } = await client.GET('/api/work-tasks', {
    params: {
      query: {
        organization_uid: organizationUid,
        type: 'hil_approval',
        // An approval moves only by its resolution: todo until approved (done) or rejected (canceled).
        status: 'todo,in_progress,in_review',
        sort: '-created_at',
        per_page: PAGE_SIZE,
      },
    },
  });
  return data;
}

/**
 * The organization's pending approvals, polled while signed in (the nav's count badge and the inbox
 * share them). An approval that leaves the list without being decided here is read once more, so the
 * page can say who decided it.
 */
export function ApprovalsProvider({ children }: { children: ReactNode }) {
  const { client, organization } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const [status, setStatus] = useState<ApprovalsState['status']>('loading');
  const [items, setItems] = useState<WorkTask[]>([]);
  const [total, setTotal] = useState(0);
  const [problem, setProblem] = useState<string>();
  const [departures, setDepartures] = useState<Departure[]>([]);
  const known = useRef(new Map<string, WorkTask>());
  const settled = useRef(new Set<string>());
  const inFlight = useRef<Promise<void> | null>(null);

  const depart = useCallback((task: WorkTask, how: Departure['how']) => {
    setDepartures((list) => [{ task, how, at: Date.now() }, ...list.filter((d) => d.task.uid !== task.uid)]);
  }, []);

  const refresh = useCallback((): Promise<void> => {
    // One request at a time: a decision's refresh and the timer's can coincide.
    if (inFlight.current) return inFlight.current;
    const run = (async () => {
      try {
        const page = await pendingApprovals(client, organizationUid);
        // A list asked for before a decision here still has the decided approval: it never comes back.
        const pending = page.items.filter((t) => !settled.current.has(t.uid));
        const now = new Set(pending.map((t) => t.uid));
        const left = [...known.current.values()].filter(
          (t) => !now.has(t.uid) && !settled.current.has(t.uid),
        );
        known.current = new Map(pending.map((t) => [t.uid, t]));
        setItems(pending);
        setTotal(page._meta.total_items - (page.items.length - pending.length));
        setStatus('ready');
        setProblem(undefined);
        await Promise.all(
          left.map(async (task) => {
            settled.current.add(task.uid);
            try {
              depart(
                (await client.GET('/api/work-tasks/{task_uid}', { params: { path: { task_uid: task.uid } } }))
                  .data,
                'elsewhere',
              );
            } catch (error) {
              if (codeOf(error) === 'not_found') depart(task, 'gone');
            }
          }),
        );
      } catch (error) {
        setProblem(problemOf(error));
        setStatus((s) => (s === 'loading' ? 'error' : s));
      } finally {
        inFlight.current = null;
      }
    })();
    inFlight.current = run;
    return run;
  }, [client, organizationUid, depart]);

  useEffect(() => {
    known.current = new Map();
    settled.current = new Set();
    setStatus('loading');
    setItems([]);
    setDepartures([]);
    let timer: number | undefined;
    let stopped = false;
    const tick = async () => {
      await refresh();
      if (!stopped) timer = window.setTimeout(() => void tick(), POLL_INTERVAL_MS);
    };
    void tick();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [refresh]);

  const settle = useCallback(
    (task: WorkTask, how: Departure['how']) => {
      settled.current.add(task.uid);
      known.current.delete(task.uid);
      setItems((list) => list.filter((t) => t.uid !== task.uid));
      setTotal((n) => Math.max(0, n - 1));
      depart(task, how);
      void refresh();
    },
    [depart, refresh],
  );

  const dismiss = useCallback(
    (uid: string) => setDepartures((list) => list.filter((d) => d.task.uid !== uid)),
    [],
  );

  const value = useMemo<ApprovalsState>(
    () => ({ status, items, total, problem, departures, refresh, settle, dismiss }),
    [status, items, total, problem, departures, refresh, settle, dismiss],
  );
  return <ApprovalsContext.Provider value={value}>{children}</ApprovalsContext.Provider>;
}

export function useApprovals(): ApprovalsState {
  const state = useContext(ApprovalsContext);
  if (!state) throw new Error('useApprovals outside ApprovalsProvider');
  return state;
}
