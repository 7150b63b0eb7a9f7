import type { FastifyReply } from 'fastify';
import type { TaskStatusWaiters } from './task-status-waiters.ts';

/** An approval nobody has decided yet: the only kind of task a `wait` holds for. */
export const awaitsDecision = (task: Record<string, unknown>) =>
  task.type === 'hil_approval' && !task.resolution;

/**
 * The long-poll of `GET /api/work-tasks/{uid}?wait=N`: the task as soon as it is decided, or as it is
 * once `waitS` has passed, the client has gone or the server is stopping. No database connection is held
 * while waiting: each round registers interest first, then reads, then sleeps until woken.
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
  try {
    for (;;) {
      const watch = waiters.watch(taskUid);
      try {
        const task = await read();
        const left = deadline - Date.now();
        if (!awaitsDecision(task) || left <= 0 || gone.signal.aborted || waiters.isClosed) return task;
        await watch.changed(left, gone.signal);
      } finally {
        watch.dispose();
      }
    }
  } finally {
    reply.raw.off('close', onClose);
  }
}
