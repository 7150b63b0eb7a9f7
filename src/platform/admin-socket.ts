import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';

/**
 * The local admin socket (docs/cli.md#beside-a-running-server): PGlite can be opened by one process
 * only, so while a server or `remit worker` owns an embedded DATA_DIR, `remit` commands reach its
 * database through this socket instead. The protocol is newline-delimited JSON: the client sends one
 * request line `{"v":1,"argv":[…]}`, the server answers with lines `{"stdout":…}` and `{"stderr":…}`
 * as the command writes, then `{"exit":N}`, and closes; `{"error":…}` instead when it refuses the
 * request itself.
 *
 * The trust model is the file's mode: the socket is created 0600 inside a directory that no one but
 * its owner may write, so only the user who runs the server (and root) can connect, and whoever can is
 * trusted as the CLI is. Unix domain sockets only: not on Windows.
 */

export const ADMIN_SOCKET_FILE = 'admin.sock';
const PROTOCOL_VERSION = 1;
/** The request line, at most (an argv is a few hundred bytes). */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** One answer line, at most; the server splits longer output into several lines. */
const MAX_FRAME_BYTES = 1024 * 1024;
const OUTPUT_CHUNK_CHARS = 128 * 1024;
const MAX_ARGS = 64;
const MAX_ARG_CHARS = 4096;
/** Commands served at once; more connections are turned away until one ends. */
const MAX_CONNECTIONS = 8;
/** sun_path holds 108 bytes on Linux and 104 on macOS and the BSDs, the final NUL included. */
const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

export interface CommandOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** Runs one command for a client; `command` is its name for the log (never its arguments). */
export type AdminCommandHandler = (
  argv: string[],
  io: CommandOutput,
) => Promise<{ exitCode: number; command: string }>;

/** The socket is not served, or cannot be used by a client; the message says why. */
export class AdminSocketUnavailableError extends Error {}

/** The server answered, but not with the command's result (it refused the request, or went away). */
export class AdminSocketError extends Error {}

export function adminSocketPath(dataDir: string): string {
  return path.join(path.resolve(dataDir), ADMIN_SOCKET_FILE);
}

/** Why the socket cannot live in `dataDir`, for the server and the client alike; undefined if it can. */
function unusableBecause(dataDir: string): string | undefined {
  if (process.platform === 'win32') return 'the admin socket is not supported on Windows';
  const socketPath = adminSocketPath(dataDir);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    return `its path ${socketPath} is longer than a Unix socket path may be (${MAX_SOCKET_PATH_BYTES} bytes)`;
  }
  let mode: number;
  try {
    mode = fs.statSync(dataDir).mode;
  } catch {
    return `${dataDir} does not exist`;
  }
  // Whoever may write the directory may put a socket of their own in its place.
  if ((mode & 0o022) !== 0) {
    return `${dataDir} is writable by its group or by others (mode ${(mode & 0o777).toString(8)}); make it 0700`;
  }
  return undefined;
}

export interface AdminSocketServer {
  path: string;
  /** Stops accepting, waits for the commands running, removes the socket file. */
  close(): Promise<void>;
}

interface ListenOptions {
  /** How long a client has to send its request line. */
  requestTimeoutMs?: number;
  log?: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
}

function frame(value: Record<string, unknown>): string {
  return `${JSON.stringify(value)}\n`;
}

interface Request {
  argv: string[];
}

function parseRequest(line: string): Request | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'The request is not JSON';
  }
  const request = value as { v?: unknown; argv?: unknown };
  if (typeof value !== 'object' || value === null) return 'The request is not a JSON object';
  if (request.v !== PROTOCOL_VERSION) {
    return `Protocol version ${String(request.v)} is not ${PROTOCOL_VERSION}: run the remit of the server's version`;
  }
  const { argv } = request;
  if (
    !Array.isArray(argv) ||
    argv.length > MAX_ARGS ||
    !argv.every((a) => typeof a === 'string' && a.length <= MAX_ARG_CHARS)
  ) {
    return `argv must be an array of at most ${MAX_ARGS} strings of at most ${MAX_ARG_CHARS} characters`;
  }
  return { argv: argv as string[] };
}

/**
 * Serves `handler` on DATA_DIR/admin.sock. Call it only while holding the data directory's lock: a
 * socket file found there is then one left by a process that died (kill -9), and is replaced. The
 * socket is created with mode 0600 (the umask is set around the bind, so it is never reachable with a
 * wider mode) and refused — AdminSocketUnavailableError — in a directory others may write.
 */
export async function listenAdminSocket(
  dataDir: string,
  handler: AdminCommandHandler,
  options: ListenOptions = {},
): Promise<AdminSocketServer> {
  const reason = unusableBecause(dataDir);
  if (reason) throw new AdminSocketUnavailableError(reason);
  const socketPath = adminSocketPath(dataDir);
  const found = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (found && !found.isSocket()) {
    throw new AdminSocketUnavailableError(`${socketPath} exists and is not a socket; it was left as it is`);
  }
  if (found) fs.rmSync(socketPath, { force: true });

  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const waiting = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    socket.setEncoding('utf8');
    socket.on('error', () => undefined); // a client that went away; nothing to tell it
    waiting.add(socket);
    let received = '';
    let started = false;
    const refuse = (message: string) => {
      waiting.delete(socket);
      socket.end(frame({ error: message }));
    };
    socket.setTimeout(requestTimeoutMs, () => {
      if (!started) refuse(`No request within ${requestTimeoutMs} ms`);
    });
    socket.on('data', (chunk: string) => {
      if (started) return; // one request per connection; anything after it is ignored
      received += chunk;
      const end = received.indexOf('\n');
      if (end < 0) {
        if (Buffer.byteLength(received) > MAX_REQUEST_BYTES) {
          started = true;
          refuse(`The request is longer than ${MAX_REQUEST_BYTES} bytes`);
        }
        return;
      }
      started = true;
      waiting.delete(socket);
      socket.setTimeout(0);
      const request = parseRequest(received.slice(0, end));
      if (typeof request === 'string') {
        refuse(request);
        return;
      }
      void serve(socket, request.argv);
    });
  });
  server.maxConnections = MAX_CONNECTIONS;

  const serve = async (socket: net.Socket, argv: string[]) => {
    const send = (stream: 'stdout' | 'stderr') => ({
      write(text: string) {
        if (socket.destroyed || !socket.writable) return true; // the client left; the command goes on
        for (let at = 0; at < text.length; at += OUTPUT_CHUNK_CHARS) {
          socket.write(frame({ [stream]: text.slice(at, at + OUTPUT_CHUNK_CHARS) }));
        }
        return true;
      },
    });
    const started = Date.now();
    let exitCode = 1;
    let command = '';
    try {
      ({ exitCode, command } = await handler(argv, { stdout: send('stdout'), stderr: send('stderr') }));
    } catch (error) {
      send('stderr').write(`remit: ${error instanceof Error ? error.message : String(error)}\n`);
      options.log?.error({ err: error }, 'admin socket command failed');
    }
    options.log?.info(
      { command, exit_code: exitCode, duration_ms: Date.now() - started },
      'admin socket command',
    );
    if (!socket.destroyed) socket.end(frame({ exit: exitCode }));
  };

  // Created 0600 from the start: the mode is the credential, so no moment with a wider one. listen()
  // binds a Unix socket synchronously, so the umask is back before any other code runs.
  const umask = process.umask(0o177);
  try {
    server.listen(socketPath);
  } finally {
    process.umask(umask);
  }
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.on('error', (error) => options.log?.error({ err: error }, 'admin socket error'));
  fs.chmodSync(socketPath, 0o600);
  const inode = fs.statSync(socketPath).ino;
  // Also when the process ends without close() (an uncaught error), but only our own file.
  const removeFile = () => {
    if (fs.statSync(socketPath, { throwIfNoEntry: false })?.ino === inode)
      fs.rmSync(socketPath, { force: true });
  };
  process.on('exit', removeFile);

  let closing: Promise<void> | undefined;
  return {
    path: socketPath,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Connections still to send their request are dropped; commands running are waited for.
        for (const socket of waiting) socket.destroy();
      }).then(() => {
        removeFile();
        process.off('exit', removeFile);
      });
      return closing;
    },
  };
}

interface SendOptions {
  connectTimeoutMs?: number;
  /** How long to wait for the command to finish; it may go on in the server after that. */
  commandTimeoutMs?: number;
}

/**
 * Runs `argv` in the process that serves DATA_DIR/admin.sock, writing its output to `io` as it comes,
 * and returns its exit code. AdminSocketUnavailableError: there is no socket to use (none, not a socket,
 * nothing answering, not ours); the caller falls back to what it would have said without one.
 */
export async function sendAdminCommand(
  dataDir: string,
  argv: string[],
  io: CommandOutput,
  options: SendOptions = {},
): Promise<number> {
  const reason = unusableBecause(dataDir);
  if (reason) throw new AdminSocketUnavailableError(reason);
  const socketPath = adminSocketPath(dataDir);
  const found = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (!found) {
    throw new AdminSocketUnavailableError(
      `there is no ${socketPath} (its holder serves none, or is still starting)`,
    );
  }
  if (!found.isSocket()) throw new AdminSocketUnavailableError(`${socketPath} is not a socket`);
  const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
  const commandTimeoutMs = options.commandTimeoutMs ?? 10 * 60_000;

  const socket = net.connect(socketPath);
  socket.setEncoding('utf8');
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new AdminSocketUnavailableError(`${socketPath} did not accept within ${connectTimeoutMs} ms`),
          ),
        connectTimeoutMs,
      );
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          new AdminSocketUnavailableError(
            error.code === 'ECONNREFUSED'
              ? `nothing answers on ${socketPath} (left by a process that died, or the server is still starting)`
              : error.code === 'EACCES'
                ? `${socketPath} belongs to another user`
                : `${socketPath}: ${error.message}`,
          ),
        );
      });
    });
  } catch (error) {
    socket.destroy();
    throw error;
  }

  return new Promise<number>((resolve, reject) => {
    let buffered = '';
    let settled = false;
    const settle = (outcome: number | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (typeof outcome === 'number') resolve(outcome);
      else reject(outcome);
    };
    const timer = setTimeout(
      () =>
        settle(
          new AdminSocketError(
            `No result from the server within ${Math.round(commandTimeoutMs / 1000)} s; the command may still be running there`,
          ),
        ),
      commandTimeoutMs,
    );
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        let message: { stdout?: unknown; stderr?: unknown; exit?: unknown; error?: unknown };
        try {
          message = JSON.parse(line) as typeof message;
        } catch {
          settle(new AdminSocketError('The server sent a line that is not JSON'));
          return;
        }
        if (typeof message.stdout === 'string') io.stdout.write(message.stdout);
        else if (typeof message.stderr === 'string') io.stderr.write(message.stderr);
        else if (typeof message.exit === 'number') settle(message.exit);
        else if (typeof message.error === 'string')
          settle(new AdminSocketError(`The server refused the request: ${message.error}`));
      }
      if (Buffer.byteLength(buffered) > MAX_FRAME_BYTES) {
        settle(new AdminSocketError(`The server sent a line longer than ${MAX_FRAME_BYTES} bytes`));
      }
    });
    socket.on('error', (error) => settle(new AdminSocketError(`The admin socket failed: ${error.message}`)));
    socket.on('close', () =>
      settle(new AdminSocketError('The server closed the admin socket before the command finished')),
    );
    socket.write(frame({ v: PROTOCOL_VERSION, argv }));
  });
}
