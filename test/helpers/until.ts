/**
 * Polls `probe` every 50 ms until it returns something truthy; fails after `ms` naming `what`. For
 * waiting on a condition (a job done, a process gone): never a sleep of a guessed length, and the
 * deadline is generous, so a busy machine makes a test slower, not red.
 */
export async function until<T>(
  probe: () => Promise<T | undefined | null | false>,
  what: string,
  ms = 20_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Resolves once the clock has moved past the millisecond of the call, so a timestamp taken after it is
 * later than one taken before (for tests that need distinct instants, not a length of time).
 */
export async function nextMillisecond(): Promise<void> {
  const start = Date.now();
  while (Date.now() <= start) await new Promise((resolve) => setTimeout(resolve, 1));
}
