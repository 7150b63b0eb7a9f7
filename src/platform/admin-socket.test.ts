import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ADMIN_SOCKET_FILE,
  AdminSocketError,
  AdminSocketUnavailableError,
  listenAdminSocket,
  MAX_REQUEST_BYTES,
  sendAdminCommand,
  type AdminCommandHandler,
  type AdminSocketServer,
} from './admin-socket.ts';

/** What one command wrote, and its exit code. */
async function send(dir: string, argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await sendAdminCommand(dir, argv, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}

/** Sends raw bytes on the socket and collects every line the server answers until it closes. */
async function raw(dir: string, bytes: string): Promise<Record<string, unknown>[]> {
  const socket = net.connect(path.join(dir, ADMIN_SOCKET_FILE));
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  socket.write(bytes);
  await new Promise((resolve) => socket.on('close', resolve));
  return answer
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function deferred() {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

describe('the admin socket', () => {
  let dir: string;
  let server: AdminSocketServer | undefined;
  const echo: AdminCommandHandler = async (argv, io) => {
    io.stdout.write(`ran ${argv.join(' ')}\n`);
    io.stderr.write('a warning\n');
    return { exitCode: argv[0] === 'fail' ? 3 : 0, command: argv[0] ?? '' };
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-sock-'));
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs a command for a client: its stdout, stderr and exit code; the socket is 0600', async () => {
    server = await listenAdminSocket(dir, echo);
    const stat = fs.lstatSync(server.path);
    expect(stat.isSocket()).toBe(true);
    expect(stat.mode & 0o777).toBe(0o600);
    expect(await send(dir, ['users', 'create', '--json'])).toEqual({
      code: 0,
      stdout: 'ran users create --json\n',
      stderr: 'a warning\n',
    });
    expect((await send(dir, ['fail'])).code).toBe(3);
  });

  it('splits output longer than one line may be into several, in order', async () => {
    const big = 'x'.repeat(300_000) + 'y'.repeat(300_000);
    server = await listenAdminSocket(dir, async (_argv, io) => {
      io.stdout.write(big);
      return { exitCode: 0, command: 'big' };
    });
    expect((await send(dir, ['big'])).stdout).toBe(big);
  });

  it('a handler that throws answers exit 1 with the message on stderr; the server keeps serving', async () => {
    server = await listenAdminSocket(dir, async (argv, io) => {
      if (argv[0] === 'boom') throw new Error('boom');
      return echo(argv, io);
    });
    expect(await send(dir, ['boom'])).toEqual({ code: 1, stdout: '', stderr: 'remit: boom\n' });
    expect((await send(dir, ['ok'])).code).toBe(0);
  });

  it('refuses what is not a request: not JSON, another protocol version, a bad argv, too long', async () => {
    server = await listenAdminSocket(dir, echo);
    expect(await raw(dir, 'hello\n')).toEqual([{ error: 'The request is not JSON' }]);
    expect(await raw(dir, '{"v":2,"argv":[]}\n')).toEqual([
      { error: expect.stringContaining('Protocol version 2 is not 1') },
    ]);
    expect(await raw(dir, '{"v":1,"argv":[1]}\n')).toEqual([
      { error: expect.stringContaining('argv must be an array') },
    ]);
    expect(await raw(dir, `{"v":1,"argv":["${'a'.repeat(MAX_REQUEST_BYTES)}`)).toEqual([
      { error: `The request is longer than ${MAX_REQUEST_BYTES} bytes` },
    ]);
  });

  it('drops a client that sends no request in time', async () => {
    server = await listenAdminSocket(dir, echo, { requestTimeoutMs: 100 });
    expect(await raw(dir, '{"v":1,')).toEqual([{ error: 'No request within 100 ms' }]);
  });

  it('is refused in a directory its group or others may write, and not used by a client there', async () => {
    fs.chmodSync(dir, 0o770);
    await expect(listenAdminSocket(dir, echo)).rejects.toThrow(/writable by its group or by others/);
    await expect(send(dir, ['x'])).rejects.toThrow(AdminSocketUnavailableError);
  });

  it('replaces a socket file left behind, but never another kind of file', async () => {
    server = await listenAdminSocket(dir, echo);
    await server.close();
    server = undefined;
    expect(fs.existsSync(path.join(dir, ADMIN_SOCKET_FILE))).toBe(false);
    fs.writeFileSync(path.join(dir, ADMIN_SOCKET_FILE), 'not a socket');
    await expect(listenAdminSocket(dir, echo)).rejects.toThrow(/is not a socket/);
    expect(fs.readFileSync(path.join(dir, ADMIN_SOCKET_FILE), 'utf8')).toBe('not a socket');
    await expect(send(dir, ['x'])).rejects.toThrow(/is not a socket/);
  });

  it('a client finds no socket, or one nothing answers on: AdminSocketUnavailableError', async () => {
    await expect(send(dir, ['x'])).rejects.toThrow(/there is no .*admin\.sock/);
    // A socket file whose process was killed (-9) before it could remove it.
    const socketPath = path.join(dir, ADMIN_SOCKET_FILE);
    const killed = spawnSync(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    expect(killed.signal).toBe('SIGKILL');
    expect(fs.lstatSync(socketPath).isSocket()).toBe(true);
    await expect(send(dir, ['x'])).rejects.toThrow(/nothing answers on/);
    // The next server replaces it.
    server = await listenAdminSocket(dir, echo);
    expect((await send(dir, ['x'])).code).toBe(0);
  });

  it('close() stops accepting, waits for the command running, then removes the socket', async () => {
    const gate = deferred();
    const entered = deferred();
    server = await listenAdminSocket(dir, async (_argv, io) => {
      entered.release();
      await gate.promise;
      io.stdout.write('done\n');
      return { exitCode: 0, command: 'slow' };
    });
    const running = send(dir, ['slow']);
    await entered.promise;
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    await expect(send(dir, ['late'])).rejects.toThrow(AdminSocketUnavailableError);
    expect(closed).toBe(false);
    gate.release();
    expect(await running).toMatchObject({ code: 0, stdout: 'done\n' });
    await closing;
    expect(fs.existsSync(path.join(dir, ADMIN_SOCKET_FILE))).toBe(false);
    server = undefined;
  });

  it('a server that goes away mid-command is a failure, not a hang', async () => {
    // A stand-in that writes part of an answer and closes without an exit line.
    const fake = net.createServer((socket) => {
      socket.resume(); // reads the request (and the client's end), so the connection can close
      socket.end('{"stdout":"partial"}\n');
    });
    await new Promise<void>((resolve) => fake.listen(path.join(dir, ADMIN_SOCKET_FILE), resolve));
    try {
      await expect(send(dir, ['x'])).rejects.toThrow(AdminSocketError);
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
  });
});
