/**
 * Shared by the reference servers: stop on SIGTERM/SIGINT, and also when stdin closes — the bench
 * keeps a pipe open to us, so a bench that died without cleaning up does not leave us running.
 */
export function stopOn(close: () => Promise<void>): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(1), 5_000);
    force.unref();
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`close failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (!process.stdin.isTTY) {
    process.stdin.on('close', stop);
    process.stdin.on('end', stop);
    process.stdin.resume();
  }
}

export function listenAddress(): { port: number; host: string } {
  const port = Number(process.env.PORT);
  if (!Number.isInteger(port) || port <= 0) throw new Error('PORT must be set to a port number');
  return { port, host: process.env.HOST ?? '127.0.0.1' };
}
