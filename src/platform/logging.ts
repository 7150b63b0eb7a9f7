import os from 'node:os';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { pino, type DestinationStream } from 'pino';
import { currentDbContext } from './db/async-context.ts';
import { currentTraceIds } from './observability/tracing.ts';

const LOG_FIELDS = Symbol('remit log fields');

type WithFields = { [LOG_FIELDS]?: Record<string, string> };

/**
 * Fields every later line of `logger` carries, and of the loggers made from it: a request's logger
 * gets `organization_uid` once the caller is known (auth.ts), and again when the handler settles on
 * another of the caller's organizations. Kept on the logger rather than bound with `child()`, because
 * Fastify's request and reply share one logger object, and pino appends a binding set twice instead
 * of replacing it.
 */
export function setLogFields(logger: FastifyBaseLogger, fields: Record<string, string>): void {
  const holder = logger as unknown as WithFields;
  if (Object.prototype.hasOwnProperty.call(holder, LOG_FIELDS)) Object.assign(holder[LOG_FIELDS]!, fields);
  else holder[LOG_FIELDS] = { ...holder[LOG_FIELDS], ...fields };
}

const NO_BINDINGS = Object.freeze({});

/**
 * Fastify's per-request logger (its `childLoggerFactory`): the request id is kept as a log field
 * (above) instead of a pino binding. pino passes every binding of a child through the redaction,
 * which with our wildcard paths cost 2.4 µs per request against 0.25 µs for a child without bindings
 * (docs/performance.md#hot-paths); the lines are the same.
 */
export function requestChildLogger(
  logger: FastifyBaseLogger,
  bindings: Record<string, unknown>,
  options: object,
): FastifyBaseLogger {
  const child =
    Object.keys(options).length > 0 ? logger.child(NO_BINDINGS, options) : logger.child(NO_BINDINGS);
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(bindings)) fields[name] = String(value);
  (child as unknown as WithFields)[LOG_FIELDS] = fields;
  return child;
}

/**
 * Read for every line: the request's fields (above), a job's (jobs.ts puts its queue, id and
 * organization in the context the job runs in) and, with tracing, the ids of the current span.
 * Always a new object: pino merges the line's own fields into what this returns.
 */
function logContext(_line: object, _level: number, logger: unknown): object {
  const own = (logger as WithFields)[LOG_FIELDS];
  const job = currentDbContext()?.logFields;
  const trace = currentTraceIds();
  return own || job || trace ? { ...job, ...own, ...trace } : {};
}

/**
 * The one line each request gets, when it is answered (Fastify's two lines are off): what was asked
 * (method, the path with its credentials redacted, host, address), the status and the time taken, with
 * the request's fields (`request_id`, `organization_uid`) and trace ids — the shape of pino's lines.
 * Written here from those fields alone rather than through pino: its generic redaction (`loggerOptions`)
 * cost ≈ 35 µs a line and its serialization ≈ 10 µs, against ≈ 4 µs for this template, on a request of
 * ≈ 70 µs (docs/performance.md#logs). Undefined when logging is off or above `info`.
 */
export function accessLog(
  options: FastifyServerOptions['logger'],
): ((request: FastifyRequest, reply: FastifyReply) => void) | undefined {
  if (!options || typeof options !== 'object') return undefined;
  const { level = 'info', stream = stdoutLog() } = options as {
    level?: string;
    stream?: { write(line: string): void };
  };
  if (!pino({ level }, { write: () => undefined }).isLevelEnabled('info')) return undefined;
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(os.hostname())}`;
  return (request, reply) => {
    let fields = '';
    const own = (request.log as unknown as WithFields)[LOG_FIELDS];
    if (own)
      for (const name in own) fields += `,${JSON.stringify(name)}:${JSON.stringify(own[name] ?? null)}`;
    const trace = currentTraceIds();
    if (trace) fields += `,"trace_id":"${trace.trace_id}","span_id":"${trace.span_id}"`;
    stream.write(
      `{"level":30,"time":"${new Date().toISOString()}"${base}${fields}` +
        `,"req":{"method":${JSON.stringify(request.method)},"url":${JSON.stringify(redactUrl(request.url))}` +
        // Either may be undefined on a socket already gone: null keeps the line JSON.
        `,"host":${JSON.stringify(request.hostname ?? null)},"remoteAddress":${JSON.stringify(request.ip ?? null)}}` +
        `,"res":{"statusCode":${reply.statusCode}},"responseTime":${reply.elapsedTime}` +
        `,"msg":"request completed"}\n`,
    );
  };
}

/**
 * Lines written in one turn of the event loop, handed to `out` together at the end of it: one write
 * per turn instead of one per line (a synchronous write per line, pino's default, cost a `GET /api/me`
 * a good part of its throughput at the default level). `out` writes synchronously (sonic-boom, which
 * waits out a full pipe), so nothing is in flight when the process exits: the lines still held are
 * written then. A `kill -9` may lose the current turn's lines.
 */
class LineBatch implements DestinationStream {
  private lines: string[] = [];
  private scheduled = false;

  constructor(private readonly out: ReturnType<typeof pino.destination>) {
    process.on('exit', () => this.flush());
  }

  write(line: string): void {
    this.lines.push(line);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.lines.length === 0) return;
    const text = this.lines.length === 1 ? this.lines[0]! : this.lines.join('');
    this.lines = [];
    this.out.write(text);
  }
}

let stdout: DestinationStream | undefined;

/**
 * The process's log stream: stdout, a turn's lines written at once (`LineBatch`); see
 * docs/performance.md#logs for what it saves.
 */
export function stdoutLog(): DestinationStream {
  stdout ??= new LineBatch(pino.destination({ dest: 1, sync: true }));
  return stdout;
}

/**
 * Query parameters that are credentials: the signature and credential of a presigned download, a
 * session token. Their values never reach a log line (the rest of the URL does).
 */
const SECRET_QUERY =
  /([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|signature|token|key|api_key)=)[^&#]*/gi;

/** Path segments that are credentials (an invitation's token), registered by the routes that take one. */
const secretPathSegments = new Map<string, RegExp>();

/**
 * Registers `prefix` + one path segment as a credential: the segment is redacted wherever `redactUrl`
 * runs (request logs, trace spans), except the literal segments in `except` (other routes' names).
 */
export function redactPathSegmentAfter(prefix: string, except: readonly string[] = []): void {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const kept = except.length > 0 ? `(?!(?:${except.map(escape).join('|')})(?:[/?#]|$))` : '';
  secretPathSegments.set(prefix, new RegExp(`^(${escape(prefix)})${kept}[^/?#]+`));
}

export function redactUrl(url: string): string {
  let redacted = url.replace(SECRET_QUERY, '$1[redacted]');
  for (const pattern of secretPathSegments.values()) redacted = redacted.replace(pattern, '$1[redacted]');
  return redacted;
}

/**
 * JSON logs with the request id on every line, the organization once the caller is authenticated, a
 * job's queue and id in its lines (docs/observability.md#logs). No credential reaches a log (docs/security.md#logs):
 * the Authorization and Cookie headers, the Idempotency-Key, signed query parameters, and any member
 * named like a key, secret, password, token or SMTP URL — at the top level of a log line or one or two
 * levels down (a request body, an error's details) — are replaced by `[redacted]`.
 */
export function loggerOptions(
  level: string,
  stream?: { write(line: string): void },
): FastifyServerOptions['logger'] {
  const names = [
    'api_key',
    'key',
    'secret',
    'password',
    'token',
    'smtp_url',
    'smtpUrl',
    'authorization',
    'cookie',
  ];
  return {
    level,
    ...(stream ? { stream } : {}),
    mixin: logContext,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["idempotency-key"]',
        'res.headers["set-cookie"]',
        'headers.authorization',
        'headers.cookie',
        'headers["idempotency-key"]',
        ...names,
        ...names.map((n) => `*.${n}`),
        ...names.map((n) => `*.*.${n}`),
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { method: string; url: string; hostname?: string; ip?: string; id?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        host: req.hostname,
        remoteAddress: req.ip,
      }),
    },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
  };
}
