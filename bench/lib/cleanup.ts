/**
 * Everything the bench must undo (child processes, temp dirs, the throwaway database), undone in
 * reverse order exactly once — on success, on error and on Ctrl-C alike.
 */
type Task = { label: string; run: () => Promise<void> };

const tasks: Task[] = [];
let running: Promise<void> | undefined;

/** Registers an undo step; returns a function that runs it early (and removes it from the list). */
export function onCleanup(label: string, run: () => Promise<void>): () => Promise<void> {
  const task: Task = { label, run };
  if (running) {
    // Cleanup has begun (Ctrl-C): whatever was started meanwhile is undone at once.
    void run().catch((error: unknown) =>
      process.stderr.write(`cleanup: ${label} failed: ${errorMessage(error)}\n`),
    );
    return async () => undefined;
  }
  tasks.push(task);
  return async () => {
    const index = tasks.indexOf(task);
    if (index === -1) return;
    tasks.splice(index, 1);
    await task.run();
  };
}

/** Runs every registered step, newest first; a failing step is reported and the rest still run. */
export function cleanupStarted(): boolean {
  return running !== undefined;
}

export function cleanupAll(): Promise<void> {
  running ??= (async () => {
    while (tasks.length > 0) {
      const task = tasks.pop()!;
      try {
        await task.run();
      } catch (error) {
        process.stderr.write(`cleanup: ${task.label} failed: ${errorMessage(error)}\n`);
      }
    }
  })();
  return running;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
