import { useCallback, useEffect, useRef, useState } from 'react';
import { codeOf, problemOf } from '../api.ts';
import { formatCount, type RunAttributes } from '../agents-view.ts';
import { labelOf } from '../list-query.ts';
import { Link } from '../router.tsx';
import { useSignedIn } from '../session.tsx';

/** While a run on screen is pending or running, its page asks again this often (the issue: 2–3 s). */
export const AGENT_RUNS_POLL_MS = 2_500;

/** Agents › Collector › Run: where a page sits (the top bar's "Agents" is one level up only). */
export function Breadcrumb({ trail }: { trail: { label: string; to?: string }[] }) {
  return (
    <nav aria-label="Breadcrumb" className="breadcrumb">
      <ol>
        {trail.map((step, i) => (
          <li key={`${i}:${step.label}`}>
            {step.to ? <Link to={step.to}>{step.label}</Link> : <span aria-current="page">{step.label}</span>}
          </li>
        ))}
      </ol>
    </nav>
  );
}

export function RunStatus({ run }: { run: RunAttributes }) {
  return (
    <span className="run-status">
      <span className={`status-pill run-${run.status ?? 'unknown'}`}>{labelOf(run.status ?? 'unknown')}</span>
      {run.sandbox && <span className="sandbox-badge">Sandbox</span>}
    </span>
  );
}

/** `1,234` total with prompt + completion beneath (named for screen readers and on hover). */
export function TokenUsage({ usage }: { usage: RunAttributes['token_usage'] }) {
  if (!usage) return <span className="muted">—</span>;
  const prompt = formatCount(usage.prompt_tokens);
  const completion = formatCount(usage.completion_tokens);
  return (
    <span className="tokens" title={`${prompt} prompt + ${completion} completion tokens`}>
      <span className="tokens-total">{formatCount(usage.total_tokens)}</span>
      <span className="cell-note muted">
        {prompt}
        <span className="visually-hidden"> prompt</span> + {completion}
        <span className="visually-hidden"> completion</span>
      </span>
    </span>
  );
}

/** Whether the person may see token usage: admins hold `agents:token_usage`, members never do. */
export function useSeesTokenUsage(): boolean {
  return useSignedIn().organization.role === 'admin';
}

/**
 * POST /api/agent-runs/{uid}/cancel, and what to tell the person: cancelled, or — 409 — that it had
 * already ended (the page reads the run again and shows how).
 */
export function useCancelRun(onDone: (message: string) => void) {
  const { client } = useSignedIn();
  const [busy, setBusy] = useState<string>();
  const cancel = useCallback(
    async (runUid: string) => {
      setBusy(runUid);
      try {
        await client.POST('/api/agent-runs/{run_uid}/cancel', { params: { path: { run_uid: runUid } } });
        onDone('Run cancelled.');
      } catch (error) {
        onDone(
          codeOf(error) === 'invalid_state'
            ? `This run could not be cancelled: it had already ended (${problemOf(error).replace(/^The run is already /, '')}).`
            : `The run was not cancelled: ${problemOf(error)}`,
        );
      } finally {
        setBusy(undefined);
      }
    },
    [client, onDone],
  );
  return { cancel, busy };
}

/**
 * Calls `tick` again every AGENT_RUNS_POLL_MS while `active`, one request at a time (the next waits
 * for the last to answer), and stops when it is not.
 */
export function usePolling(active: boolean, tick: () => Promise<unknown>) {
  const latest = useRef(tick);
  useEffect(() => {
    latest.current = tick;
  });
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let timer: number | undefined;
    const next = () => {
      timer = window.setTimeout(() => {
        void latest.current().finally(() => {
          if (!stopped) next();
        });
      }, AGENT_RUNS_POLL_MS);
    };
    next();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [active]);
}

export type Loaded<T> =
  | { status: 'loading' }
  | { status: 'error'; message: string; code: string | undefined }
  /** `problem`: a later read failed; what was read before stays on screen. */
  | { status: 'ready'; data: T; problem?: string };

/**
 * What a page reads and reads again (polled, or after a change): one state per `key`, an answer for an
 * older key dropped, a failed re-read kept beside the last good answer rather than replacing it.
 */
export function useLoaded<T>(key: string, load: () => Promise<T>) {
  const [state, setState] = useState<{ key: string; value: Loaded<T> }>({
    key,
    value: { status: 'loading' },
  });
  const loadRef = useRef(load);
  const currentKey = useRef(key);
  useEffect(() => {
    loadRef.current = load;
  });
  const reload = useCallback(async () => {
    try {
      const data = await loadRef.current();
      if (currentKey.current === key) setState({ key, value: { status: 'ready', data } });
    } catch (error) {
      if (currentKey.current !== key) return;
      setState((previous) =>
        previous.key === key && previous.value.status === 'ready'
          ? {
              key,
              value: { ...previous.value, problem: `${problemOf(error)} It will be asked for again.` },
            }
          : { key, value: { status: 'error', message: problemOf(error), code: codeOf(error) } },
      );
    }
  }, [key]);
  useEffect(() => {
    currentKey.current = key;
    void reload();
  }, [key, reload]);
  const set = useCallback((data: T) => setState({ key, value: { status: 'ready', data } }), [key]);
  const value: Loaded<T> = state.key === key ? state.value : { status: 'loading' };
  return { value, reload, set };
}
