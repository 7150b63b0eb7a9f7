import type { FastifyReply } from 'fastify';
import type { TaskStatusWaiters } from './task-status-waiters.ts';

/** An approval nobody has decided yet: the only kind of task a `wait` holds for. */
export const awaitsDecision = (task: Record<string, unknown>) =>
  task.type === 'hil_approval' && !task.resolution;

/** The pending response's stamp (`response.at`), or null: what tells a new response from the one seen. */
const responseStamp = (task: Record<string, unknown>): string | null => {
  const response = task.response as { at?: unknown } | null | undefined;
  return response && typeof response.at === 'string' ? response.at : null;
};

/**
 * The long-poll of `GET /api/work-tasks/{uid}?wait=N`: the task as soon as it is decided or a person
 * responds to it with feedback (a `response` other than the one pending when the wait began), or as it
 * is once `waitS` has passed, the client has gone or the server is stopping. A response already pending
 * does not end the wait, so a runtime that does not act on feedback keeps waiting for the decision
 * instead of asking in a loop. No database connection is held while waiting: each round registers
 * interest first, then reads, then sleeps until woken.
 */
export async function getTaskWhenDecided<T extends Record<string, unknown>>(
  waiters: TaskStatusWaiters,
  read: () => Promise<T>,
  taskUid: string,
  waitS: number,
  reply: FastifyReply,
): Promise<T> {
  const deadline = Date.now() + waitS * 1000;
  const gone = new AbortController();
  const onClose = () => gone.abort();
  // A response's 'close' before it was written means the client went away: stop holding for it.
  reply.raw.once('close', onClose);
  let seen: string | null | undefined;
  try {
    for (;;) {
      const watch = waiters.watch(taskUid);
      try {
        const task = await read();
        const stamp = responseStamp(task);
        if (seen === undefined) seen = stamp;
        const responded = stamp !== null && stamp !== seen;
        const left = deadline - Date.now();
        if (!awaitsDecision(task) || responded || left <= 0 || gone.signal.aborted || waiters.isClosed)
          return task;
        await watch.changed(left, gone.signal);
      } finally {
        watch.dispose();
      }
    }
  } finally {
    reply.raw.off('close', onClose);
  }
}
