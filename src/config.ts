import os from 'node:os';
import path from 'node:path';

/**
 * Every setting the service reads, parsed once at start. This is the only module that touches
 * `process.env`; everything else receives a `Config`.
 */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** PostgreSQL connection string; undefined means embedded PGlite under `dataDir`. */
  databaseUrl: string | undefined;
  /** Milliseconds before a statement is cancelled (answered 503). */
  statementTimeoutMs: number;
  databasePoolSize: number;
  /** PGlite's shared buffers in MB (its largest memory use); PostgreSQL's own setting is the server's. */
  pgliteSharedBuffersMb: number;
  /** PGlite's WAL between checkpoints at most (MB): bounds what a start after a crash replays. */
  pgliteMaxWalMb: number;
  /** PGlite: a checkpoint this often (seconds) when something was written; 0 turns them off. */
  pgliteCheckpointIntervalS: number;
  /** PGlite: V8's optimising compiler for its WebAssembly (faster warm queries, slower start, more memory). */
  pgliteOptimizedCode: boolean;
  rateLimitMax: number;
  rateLimitWindowS: number;
  redisUrl: string | undefined;
  /** Optional server-side secret mixed into API key hashes (HMAC-SHA-256 instead of SHA-256). */
  apiKeyPepper: string | undefined;
  /**
   * Seconds a server keeps an API key's principal after authenticating it (0: never). Every change to
   * keys, users or memberships forgets all of them at once (docs/performance.md#authentication-cache).
   */
  authCacheTtlS: number;
  /**
   * Seconds a server keeps an invoice's view after `GET /api/invoices/{uid}` read it (0: never). Any
   * change to what the view reads forgets the organization's views (docs/performance.md#invoice-view-cache).
   */
  invoiceCacheTtlS: number;
  /**
   * How often a request waiting for a decision (`GET /api/work-tasks/{uid}?wait=N`) reads the task again
   * even without a notification: a safety net; a decision is normally heard at once (LISTEN/NOTIFY).
   */
  taskWaitRecheckS: number;
  /**
   * Seconds between the job queue's maintenance runs in a process that works the queues: what expires
   * a job whose worker died (so it is retried) and archives finished ones. Default 120 (pg-boss's own),
   * 1 to 3600.
   */
  jobMaintenanceIntervalS: number;
  /**
   * Hours an emailed approval link stays valid (docs/approval-emails.md#the-links); default 72, 1 to
   * 720. Each link works once, and only while its approval is undecided.
   */
  approvalLinkTtlH: number;
  /** Seals stored credentials (AES-256-GCM); required with DATABASE_URL, generated into DATA_DIR otherwise. */
  secretKey: string | undefined;
  /** Earlier keys, comma-separated: they still open what they sealed until `remit secrets rotate`. */
  secretKeysPrevious: string[];
  logLevel: string;
  /** Run background workers in this process (the API server does by default). */
  runWorkers: boolean;
  /** Public base address used in links the service hands out (pagination links, download URLs). */
  publicBaseUrl: string;
  allowPrivateNetworkTargets: boolean;
  /** How long a billing partner has to answer an invoice sync (CONTRACT §6: 5 s). */
  billingTimeoutMs: number;
  /** How long a webhook endpoint has to answer one delivery (docs/webhooks.md; default 10 s). */
  webhookTimeoutMs: number;
  /**
   * How long a claimed delivery attempt is presumed alive (default the timeout + 30 s); once it has run
   * out, a worker that died mid-send is taken over and the delivery is sent again. Always above the
   * timeout, so a live attempt is never sent twice at once.
   */
  webhookLeaseMs: number;
  /** How many deliveries one worker process sends at once (default 8). */
  webhookConcurrency: number;
  /** At most this many deliveries to one endpoint are in flight at once, over all processes (default 2). */
  webhookEndpointMaxInFlight: number;
  /** At most this many deliveries of one organization are in flight at once, over all processes (default 4). */
  webhookOrganizationMaxInFlight: number;
  /** Object storage (CONTRACT §6): the embedded store under `dataDir`, or any S3 API. */
  objectStorage: ObjectStorageConfig;
  /** Seconds a presigned download URL stays valid (default 900; S3 allows at most 7 days). */
  presignedUrlExpiresS: number;
  /** Operator SMTP server (`smtp://` or `smtps://`, trusted); unset: email goes to `DATA_DIR/outbox`. */
  smtpUrl: string | undefined;
  /** Every `smtp://` server (operator's or an account's) must upgrade with STARTTLS, else nothing is sent. */
  smtpRequireTls: boolean;
  /** The sender of Remit's own mail: invitations, password resets, sign-in links (docs/people.md). */
  mailFrom: { address: string; name: string };
  /** Sign-in sessions and emailed tokens (docs/people.md). */
  people: {
    sessionIdleS: number;
    sessionMaxAgeS: number;
    invitationTtlS: number;
    passwordResetTtlS: number;
    signInLinkTtlS: number;
  };
  /**
   * Seconds a `sending` attempt (and its send job) is presumed alive; after that a sweep, or the job's
   * retry, finds out what happened to it. The SMTP exchange is bounded below it (120 s, or the lease
   * minus 5 s when shorter), so a live send is never taken over.
   */
  emailSendLeaseS: number;
  /** Seconds a stopping process gives in-flight requests and jobs (an SMTP send takes up to 120 s). */
  shutdownGraceS: number;
  /** Days audit events are kept (docs/audit-log.md#retention); 0 keeps them forever. */
  auditRetentionDays: number;
  /** Threads at most that read knowledge files' text, off the event loop (default min(2, CPUs)). */
  extractionThreads: number;
  /**
   * Seconds one file's text extraction may take before it is stopped and the file fails; at most 600,
   * under the processing job's 15-minute expiry.
   */
  extractionTimeoutS: number;
  /** Below this many free bytes on the data directory's disk, writes answer 507 `storage_full`. */
  minFreeDiskBytes: number;
  /**
   * Fastify's `trustProxy`: false (default, the connection's address is the client's), true (trust every
   * proxy), a hop count, or a list of proxy addresses/CIDRs whose `X-Forwarded-For` is believed.
   */
  trustProxy: boolean | number | string[];
  /** Origins allowed to call the API from a browser (CORS); empty (default): none. */
  corsOrigins: string[];
  /** Text generation for email inference mode (CONTRACT §6): built-in composer, or an OpenAI-compatible API. */
  llm: LlmConfig;
  /** Chat notifications (CONTRACT §6): recorded only, or also posted through the Slack Web API. */
  chat: ChatConfig;
  /** Prometheus metrics (docs/observability.md); collected only when something can read them. */
  metrics: MetricsConfig;
  /** OpenTelemetry traces over OTLP/HTTP; undefined: no tracing, and no OpenTelemetry code loaded. */
  tracing: TracingConfig | undefined;
}

export interface MetricsConfig {
  /** Metrics are collected: a token or a port is set, so a scraper can read them. */
  enabled: boolean;
  /** `Authorization: Bearer <token>` for `GET /metrics` (on the metrics port when set, else the main one). */
  token: string | undefined;
  /** A listener of its own for `GET /metrics`; the main port then does not serve it. */
  port: number | undefined;
  host: string;
}

export interface TracingConfig {
  /** Where spans are posted (…/v1/traces). */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  /** Set when OTEL_EXPORTER_OTLP_PROTOCOL asked for protobuf: the JSON encoding is sent instead. */
  protocolNote: string | undefined;
}

export type ChatConfig =
  | { kind: 'none' }
  | {
      kind: 'slack';
      botToken: string;
      /** Base of the Web API methods (default https://slack.com/api); tests point it at a local fake. */
      apiUrl: string;
      timeoutMs: number;
      /**
       * The Slack app's signing secret (`SLACK_SIGNING_SECRET`): set, approval messages carry Approve and
       * Reject buttons and `POST /api/slack/interactions` accepts requests signed with it; unset, messages
       * carry only the link to the console and that endpoint refuses everything.
       */
      signingSecret?: string | undefined;
    };

export type LlmConfig =
  | { kind: 'builtin' }
  | {
      kind: 'openai';
      /** Unset: OpenAI's own API (then `apiKey` is required). */
      baseUrl: string | undefined;
      /** Optional for local servers that take none (Ollama, vLLM). */
      apiKey: string | undefined;
      model: string;
      /** Milliseconds for the whole call; the generator never retries. */
      timeoutMs: number;
    };

export type ObjectStorageConfig =
  | { kind: 'embedded'; bucket: string }
  | {
      kind: 's3';
      /** Unset: AWS's own endpoint for `region`. */
      endpoint: string | undefined;
      bucket: string;
      region: string;
      /** Both unset: the AWS SDK's default credential chain (environment, profile, instance role). */
      accessKeyId: string | undefined;
      secretAccessKey: string | undefined;
    };

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function integer(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function optional(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

function postgresUrl(env: Env, name: string): string | undefined {
  const url = optional(env, name);
  if (url && !/^postgres(ql)?:\/\//.test(url)) throw new ConfigError(`${name} must start with postgres://`);
  return url;
}

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Any `S3_*` variable set → an S3 API (then `S3_BUCKET` is required); none → the embedded store. */
function objectStorage(env: Env): ObjectStorageConfig {
  const endpoint = optional(env, 'S3_ENDPOINT');
  const bucket = optional(env, 'S3_BUCKET');
  const region = optional(env, 'S3_REGION');
  const accessKeyId = optional(env, 'S3_ACCESS_KEY_ID');
  const secretAccessKey = optional(env, 'S3_SECRET_ACCESS_KEY');
  if (!endpoint && !bucket && !region && !accessKeyId && !secretAccessKey) {
    return { kind: 'embedded', bucket: 'remit' };
  }
  if (!bucket) throw new ConfigError('S3_BUCKET is required when any S3_* variable is set');
  if (!BUCKET_NAME.test(bucket)) {
    throw new ConfigError(`S3_BUCKET must be a valid bucket name (3-63 of a-z 0-9 . -), got "${bucket}"`);
  }
  if (endpoint && !/^https?:\/\/[^/]/.test(endpoint)) {
    throw new ConfigError('S3_ENDPOINT must start with http:// or https://');
  }
  if (!accessKeyId !== !secretAccessKey) {
    throw new ConfigError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together');
  }
  return { kind: 's3', endpoint, bucket, region: region ?? 'us-east-1', accessKeyId, secretAccessKey };
}

/** Any of `LLM_BASE_URL`, `LLM_API_KEY`, `LLM_MODEL` set → an OpenAI-compatible API (then `LLM_MODEL` is required). */
function llm(env: Env): LlmConfig {
  const baseUrl = optional(env, 'LLM_BASE_URL');
  const apiKey = optional(env, 'LLM_API_KEY');
  const model = optional(env, 'LLM_MODEL');
  const timeoutMs = integer(env, 'LLM_TIMEOUT_MS', 20_000, 100, 300_000);
  if (!baseUrl && !apiKey && !model) return { kind: 'builtin' };
  if (!model) throw new ConfigError('LLM_MODEL is required when LLM_BASE_URL or LLM_API_KEY is set');
  if (baseUrl && !/^https?:\/\/[^/]/.test(baseUrl)) {
    throw new ConfigError('LLM_BASE_URL must start with http:// or https://');
  }
  if (!baseUrl && !apiKey) throw new ConfigError('LLM_API_KEY is required when LLM_BASE_URL is not set');
  return { kind: 'openai', baseUrl, apiKey, model, timeoutMs };
}

function chat(env: Env): ChatConfig {
  const botToken = optional(env, 'SLACK_BOT_TOKEN');
  const apiUrl = (optional(env, 'SLACK_API_URL') ?? 'https://slack.com/api').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(apiUrl))
    throw new ConfigError('SLACK_API_URL must start with http:// or https://');
  if (!botToken) return { kind: 'none' };
  const signingSecret = optional(env, 'SLACK_SIGNING_SECRET');
  return {
    kind: 'slack',
    botToken,
    apiUrl,
    timeoutMs: integer(env, 'SLACK_TIMEOUT_MS', 5000, 100, 60_000),
    signingSecret,
  };
}

function metrics(env: Env): MetricsConfig {
  const token = optional(env, 'METRICS_TOKEN');
  // Guessing is the only attack on it (it is compared in constant time), so it must be long enough.
  if (token !== undefined && (token.length < 16 || /\s/.test(token))) {
    throw new ConfigError('METRICS_TOKEN must be at least 16 characters, without spaces');
  }
  const rawPort = optional(env, 'METRICS_PORT');
  const port = rawPort === undefined ? undefined : integer(env, 'METRICS_PORT', 0, 0, 65535);
  const host = optional(env, 'METRICS_HOST') ?? '127.0.0.1';
  return { enabled: token !== undefined || port !== undefined, token, port, host };
}

/** `key=value,key2=value2`, values percent-encoded (the OpenTelemetry format for OTLP headers). */
function otlpHeaders(env: Env, name: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (optional(env, name) ?? '').split(',')) {
    if (pair.trim() === '') continue;
    const at = pair.indexOf('=');
    const key = at > 0 ? pair.slice(0, at).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) {
      throw new ConfigError(`${name} must be key=value pairs separated by commas`);
    }
    try {
      headers[key.toLowerCase()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new ConfigError(`${name} has a badly percent-encoded value for ${key}`);
    }
  }
  return headers;
}

/**
 * The OpenTelemetry exporter variables (their standard meanings): a base endpoint gets `/v1/traces`
 * appended, a traces endpoint is used as it is. Neither set: no tracing.
 */
function tracing(env: Env): TracingConfig | undefined {
  const tracesEndpoint = optional(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = optional(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if ((!tracesEndpoint && !endpoint) || boolean(env, 'OTEL_SDK_DISABLED', false)) return undefined;
  const url = tracesEndpoint ?? `${endpoint!.replace(/\/+$/, '')}/v1/traces`;
  if (!/^https?:\/\/[^/]/.test(url)) {
    throw new ConfigError(
      `${tracesEndpoint ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT'} must start with http:// or https://`,
    );
  }
  const protocol =
    optional(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? optional(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined && !['http/json', 'http/protobuf'].includes(protocol)) {
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL must be http/json (or http/protobuf, sent as JSON); got "${protocol}" (gRPC is not supported)`,
    );
  }
  return {
    url,
    headers: {
      ...otlpHeaders(env, 'OTEL_EXPORTER_OTLP_HEADERS'),
      ...otlpHeaders(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'),
    },
    serviceName: optional(env, 'OTEL_SERVICE_NAME') ?? 'remit',
    protocolNote:
      protocol === 'http/protobuf'
        ? 'OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf: spans are sent as OTLP/HTTP JSON, which OTLP/HTTP receivers also accept'
        : undefined,
  };
}

/** `MAIL_FROM` as `Name <address>` or a bare address; by default no-reply at the public host. */
function mailFrom(env: Env, host: string, port: number): { address: string; name: string } {
  const raw = optional(env, 'MAIL_FROM');
  if (!raw) {
    let domain: string;
    try {
      domain = new URL(optional(env, 'PUBLIC_BASE_URL') ?? `http://${host}:${port}`).hostname;
    } catch {
      domain = 'localhost';
    }
    // An address's domain must be a name: a bare IP or localhost gets a reserved example domain.
    if (!/[a-z]/i.test(domain) || domain === 'localhost' || !domain.includes('.')) domain = 'remit.invalid';
    return { address: `no-reply@${domain}`, name: 'Remit' };
  }
  const match =
    /^\s*(.*?)\s*<([^<>\s]+@[^<>\s]+)>\s*$/.exec(raw) ?? /^\s*()([^<>\s]+@[^<>\s]+)\s*$/.exec(raw);
  if (!match)
    throw new ConfigError(`MAIL_FROM must be an address or "Name <address>", got ${JSON.stringify(raw)}`);
  return { address: match[2]!, name: match[1]!.replace(/^"|"$/g, '') || 'Remit' };
}

function smtpUrl(env: Env): string | undefined {
  const url = optional(env, 'SMTP_URL');
  if (url && !/^smtps?:\/\/[^/]/.test(url))
    throw new ConfigError('SMTP_URL must start with smtp:// or smtps://');
  return url;
}

function corsOrigins(env: Env): string[] {
  const origins = (optional(env, 'CORS_ORIGINS') ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o.length > 0);
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(
        `CORS_ORIGINS must list origins such as https://app.example.com (scheme, host, optional port; no path or *), got "${origin}"`,
      );
    }
  }
  return origins;
}

function webhookLeaseMs(env: Env, timeoutMs: number): number {
  const leaseS = integer(env, 'WEBHOOK_LEASE_S', Math.ceil(timeoutMs / 1000) + 30, 1, 3600);
  // A lease that ends before the attempt's own timeout would let a second worker send while the first
  // is still waiting for its answer.
  if (leaseS * 1000 <= timeoutMs) {
    throw new ConfigError(`WEBHOOK_LEASE_S must be longer than WEBHOOK_TIMEOUT_MS (${timeoutMs} ms)`);
  }
  return leaseS * 1000;
}

function trustProxy(env: Env): boolean | number | string[] {
  const raw = optional(env, 'TRUST_PROXY');
  if (raw === undefined) return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  const lower = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(lower)) return true;
  if (['0', 'false', 'no', 'off'].includes(lower)) return false;
  const list = raw
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  for (const entry of list) {
    if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(entry)) {
      throw new ConfigError(
        `TRUST_PROXY must be true, false, a hop count or addresses/CIDRs, got "${entry}"`,
      );
    }
  }
  return list;
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = optional(env, 'HOST') ?? '127.0.0.1';
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const storage = objectStorage(env);
  // The data directory's disk matters only when data lives there: the embedded database or object store.
  const usesDataDir = !databaseUrl || storage.kind === 'embedded';
  const webhookTimeoutMs = integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000);
  return {
    port,
    host,
    dataDir: path.resolve(optional(env, 'DATA_DIR') ?? './data'),
    databaseUrl,
    statementTimeoutMs: integer(env, 'STATEMENT_TIMEOUT_MS', 10_000, 100),
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 200),
    pgliteSharedBuffersMb: integer(env, 'PGLITE_SHARED_BUFFERS_MB', 16, 1, 4096),
    pgliteMaxWalMb: integer(env, 'PGLITE_MAX_WAL_MB', 64, 32, 65_536),
    pgliteCheckpointIntervalS: integer(env, 'PGLITE_CHECKPOINT_INTERVAL_S', 60, 0, 86_400),
    pgliteOptimizedCode: boolean(env, 'PGLITE_OPTIMIZED_CODE', false),
    rateLimitMax: integer(env, 'RATE_LIMIT_MAX', 600, 1),
    rateLimitWindowS: integer(env, 'RATE_LIMIT_WINDOW_S', 60, 1),
    redisUrl: optional(env, 'REDIS_URL'),
    apiKeyPepper: optional(env, 'API_KEY_PEPPER'),
    authCacheTtlS: integer(env, 'AUTH_CACHE_TTL_S', 10, 0, 300),
    invoiceCacheTtlS: integer(env, 'INVOICE_CACHE_TTL_S', 10, 0, 300),
    taskWaitRecheckS: integer(env, 'TASK_WAIT_RECHECK_S', 10, 1, 60),
    jobMaintenanceIntervalS: integer(env, 'JOB_MAINTENANCE_INTERVAL_S', 120, 1, 3600),
    approvalLinkTtlH: integer(env, 'APPROVAL_LINK_TTL_H', 72, 1, 720),
    secretKey: optional(env, 'SECRET_KEY'),
    secretKeysPrevious: (optional(env, 'SECRET_KEY_PREVIOUS') ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k.length > 0),
    logLevel: optional(env, 'LOG_LEVEL') ?? 'info',
    runWorkers: boolean(env, 'RUN_WORKERS', true),
    publicBaseUrl: (optional(env, 'PUBLIC_BASE_URL') ?? `http://${host}:${port}`).replace(/\/+$/, ''),
    allowPrivateNetworkTargets: boolean(env, 'ALLOW_PRIVATE_NETWORK_TARGETS', false),
    billingTimeoutMs: integer(env, 'BILLING_TIMEOUT_MS', 5000, 100, 60_000),
    webhookTimeoutMs,
    webhookLeaseMs: webhookLeaseMs(env, webhookTimeoutMs),
    webhookConcurrency: integer(env, 'WEBHOOK_CONCURRENCY', 8, 1, 64),
    webhookEndpointMaxInFlight: integer(env, 'WEBHOOK_ENDPOINT_MAX_IN_FLIGHT', 2, 1, 64),
    webhookOrganizationMaxInFlight: integer(env, 'WEBHOOK_ORGANIZATION_MAX_IN_FLIGHT', 4, 1, 256),
    objectStorage: storage,
    presignedUrlExpiresS: integer(env, 'PRESIGNED_URL_EXPIRES_S', 900, 1, 604_800),
    smtpUrl: smtpUrl(env),
    smtpRequireTls: boolean(env, 'SMTP_REQUIRE_TLS', false),
    mailFrom: mailFrom(env, host, port),
    people: {
      sessionIdleS: integer(env, 'SESSION_IDLE_TIMEOUT_S', 86_400, 300, 2_592_000),
      sessionMaxAgeS: integer(env, 'SESSION_MAX_AGE_S', 1_209_600, 3600, 31_536_000),
      invitationTtlS: integer(env, 'INVITATION_TTL_S', 604_800, 3600, 2_592_000),
      passwordResetTtlS: integer(env, 'PASSWORD_RESET_TTL_S', 3600, 300, 86_400),
      signInLinkTtlS: integer(env, 'SIGN_IN_LINK_TTL_S', 900, 60, 86_400),
    },
    emailSendLeaseS: integer(env, 'EMAIL_SEND_LEASE_S', 300, 10, 86_400),
    shutdownGraceS: integer(env, 'SHUTDOWN_GRACE_S', 150, 125, 3600),
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, 0, 36_500),
    extractionThreads: integer(env, 'EXTRACTION_THREADS', Math.min(2, os.availableParallelism()), 1, 64),
    extractionTimeoutS: integer(env, 'EXTRACTION_TIMEOUT_S', 120, 1, 600),
    minFreeDiskBytes: usesDataDir ? integer(env, 'MIN_FREE_DISK_MB', 64, 0, 1_000_000) * 1024 * 1024 : 0,
    trustProxy: trustProxy(env),
    corsOrigins: corsOrigins(env),
    llm: llm(env),
    chat: chat(env),
    metrics: metrics(env),
    tracing: tracing(env),
  };
}
