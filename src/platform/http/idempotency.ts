import crypto from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { rawQuery, type Db, type DbOrTx, type Tx } from '../db/client.ts';
import { runInScope, unscopedDb, type RequestScope } from '../db/request-scope.ts';
import { isUnsafeText, UNSAFE_TEXT_MESSAGE } from './text-safety.ts';
import { AppError } from './errors.ts';
import type { JobDeps } from './types.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Strip this member of `data` from the stored response (the plaintext of a new API key). */
    idempotencyOmitDataField?: string;
    /** How the request's transaction opens under an Idempotency-Key (IdempotencyMode). */
    idempotency?: IdempotencyMode;
  }
  interface FastifyRequest {
    idempotency: IdempotencyUnit | null;
  }
}

interface IdempotencyUnit {
  readonly claim: IdempotencyClaim;
  recorded: boolean;
  run(reply: FastifyReply, handler: () => unknown): Promise<unknown>;
  hand(response: StoredResponse, request: FastifyRequest): Promise<void>;
  abandon(): void;
}

interface IdempotencyClaim {
  organizationUid: string;
  apiKeyUid: string;
  method: string;
  path: string;
  key: string;
  hash: string;
}

const RETENTION_HOURS = 24;

/**
 * JSON with sorted object keys, so the same body written in another key order hashes the same. A loop
 * with its own stack: a route without a body schema takes whatever JSON fits its body limit, however
 * deep (validated bodies are at most MAX_JSON_DEPTH levels, text-safety.ts).
 */
function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // What is still to write, last first: a value, or text written as it is.
  const todo: ({ value: unknown } | string)[] = [{ value }];
  while (todo.length > 0) {
    const next = todo.pop()!;
    if (typeof next === 'string') {
      out.push(next);
      continue;
    }
    const v = next.value;
    if (v === null || typeof v !== 'object') {
      out.push(JSON.stringify(v ?? null));
      continue;
    }
    const array = Array.isArray(v);
    const keys = array ? null : Object.keys(v).sort();
    const count = array ? v.length : keys!.length;
    todo.push(array ? ']' : '}');
    for (let i = count - 1; i >= 0; i--) {
      const item = array ? v[i] : (v as Record<string, unknown>)[keys![i]!];
      todo.push({ value: item });
      if (!array) todo.push(`${JSON.stringify(keys![i])}:`);
      if (i > 0) todo.push(',');
    }
    out.push(array ? '[' : '{');
  }
  return out.join('');
}

function requestHash(request: FastifyRequest): string {
  const body = request.body;
  const material = Buffer.isBuffer(body) ? body.toString('base64') : canonicalJson(body);
  return crypto.createHash('sha256').update(material).digest('hex');
}

interface StoredRow {
  request_hash: string;
  state: 'in_flight' | 'done';
  response_status: number | null;
  response_body: string | null;
  response_content_type: string | null;
  is_expired: boolean;
}

interface StoredResponse {
  status: number;
  body: string;
  contentType: string | null;
}

/**
 * How an idempotent POST runs (docs/operations.md#idempotency). `transaction` (the default): the
 * request's transaction opens before the handler and holds every write it makes. `deferred`: for routes
 * that call an outside service (object storage, chat, a model) before they write; the transaction opens
 * at the handler's first `db.transaction()`, and such a route must make all its writes inside it.
 * `none`: the key is accepted and nothing is kept, for routes about the signed-in person rather than an
 * organization (their sessions, password, second factor): they write the person's own tables as the
 * service, which a request transaction (the tenant role) may not touch, and their answers (a new session,
 * a TOTP secret) must not be stored to be replayed.
 */
export type IdempotencyMode = 'transaction' | 'deferred' | 'none';

// The longest a unit of work holds its transaction waiting for its answer; past this it rolls back (the
// client never got an answer, so its retry finds no trace of this attempt).
const RESPONSE_WAIT_MS = 60_000;
// Advisory-lock namespace of idempotency keys (two-int form: apart from the schema lock's bigint key).
const LOCK_CLASS = 7_272;

class Rollback extends Error {}

const deferred = <T>() => {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

async function idempotencyPlugin(app: FastifyInstance, options: { db: Db }) {
  const db = unscopedDb(options.db);
  app.decorateRequest('idempotency', null);
  /** Keys whose request is running in this process: a second one is 409 at once, on either engine. */
  const running = new Set<string>();

  const keyParams = (c: IdempotencyClaim) => [c.organizationUid, c.apiKeyUid, c.method, c.path, c.key];
  const WHERE = `organization_uid = $1 and api_key_uid = $2 and method = $3 and path = $4 and idempotency_key = $5`;
  const identity = (c: IdempotencyClaim) => JSON.stringify(keyParams(c));

  const findStored = async (dbOrTx: DbOrTx, c: IdempotencyClaim) => {
    const [row] = await rawQuery<StoredRow>(
      dbOrTx,
      `select request_hash, state, response_status, response_body, response_content_type,
              expires_at <= now() as is_expired
         from idempotency_keys where ${WHERE}`,
      keyParams(c),
    );
    // Rows of the earlier three-commit design ('in_flight' claims) and expired ones are not answers.
    return row && row.state === 'done' && !row.is_expired ? row : undefined;
  };

  const store = async (dbOrTx: DbOrTx, c: IdempotencyClaim, response: StoredResponse) => {
    await rawQuery(
      dbOrTx,
      `insert into idempotency_keys
         (organization_uid, api_key_uid, method, path, idempotency_key, request_hash, state,
          response_status, response_body, response_content_type, expires_at)
       values ($1, $2, $3, $4, $5, $6, 'done', $7, $8, $9, now() + interval '${RETENTION_HOURS} hours')
       on conflict (organization_uid, api_key_uid, method, path, idempotency_key) do update set
         request_hash = excluded.request_hash, state = 'done', response_status = excluded.response_status,
         response_body = excluded.response_body,
         response_content_type = excluded.response_content_type, created_at = now(),
         expires_at = excluded.expires_at`,
      [...keyParams(c), c.hash, response.status, response.body, response.contentType],
    );
  };

  const inUse = () =>
    new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed');

  const replay = (reply: FastifyReply, row: StoredRow) => {
    reply.header('Idempotent-Replayed', 'true');
    // A replayed error body carries the first request's id; say so, as Stripe's Original-Request does.
    const original = /"request_id":"([\w.:-]{1,128})"/.exec(row.response_body ?? '');
    if (original) reply.header('Original-Request', original[1]);
    if (row.response_content_type) reply.header('content-type', row.response_content_type);
    return reply.code(row.response_status ?? 200).send(row.response_body ?? '');
  };

  /**
   * One idempotent request: the lock on its key, the handler's writes and the stored response in one
   * transaction. A crash anywhere before the commit leaves no trace; after it, the retry replays.
   */
  class UnitOfWork implements IdempotencyUnit {
    readonly scope: RequestScope = { tx: null, begin: null, afterCommit: [], closed: false };
    /** Settles when the transaction has committed (true) or rolled back (false); null until it opens. */
    outcome: Promise<boolean> | null = null;
    failure: unknown = null;
    /** A replay or a 409 for a twin: nothing of this request is stored. */
    storesNothing = false;
    recorded = false;
    private readonly response = deferred<StoredResponse>();

    constructor(
      readonly claim: IdempotencyClaim,
      private readonly mode: IdempotencyMode,
    ) {
      this.response.promise.catch(() => undefined);
    }

    run(reply: FastifyReply, handler: () => unknown): Promise<unknown> {
      if (this.mode === 'deferred') {
        this.scope.begin = (fn) => {
          this.scope.begin = null;
          return this.open(reply, fn);
        };
        return Promise.resolve(runInScope(this.scope, handler));
      }
      return this.open(reply, () => runInScope(this.scope, handler), false);
    }

    /**
     * Opens the transaction, takes the key's lock and runs `body` as its first work. A deferred route's
     * body is its service's transaction, awaited so that a failure rolls back all of it. A whole handler
     * is not awaited here: its promise may follow the reply, which waits for this commit.
     */
    private open<T>(reply: FastifyReply, body: (tx: Tx) => T | Promise<T>, awaitBody = true): Promise<T> {
      const result = deferred<T>();
      this.outcome = db
        .transaction(async (tx) => {
          const [lock] = await rawQuery<{ locked: boolean }>(
            tx,
            `select pg_try_advisory_xact_lock(${LOCK_CLASS}, hashtext($1)) as locked`,
            [identity(this.claim)],
          );
          const stored = lock?.locked ? await findStored(tx, this.claim) : undefined;
          if (!lock?.locked || stored) {
            // Another process holds the key, or answered it since our first look.
            this.storesNothing = true;
            if (stored && this.mode === 'transaction') result.resolve(replay(reply, stored) as T);
            else result.reject(inUse());
            throw new Rollback();
          }
          this.scope.tx = tx;
          if (awaitBody) {
            try {
              result.resolve(await body(tx));
            } catch (error) {
              result.reject(error);
              throw new Rollback();
            }
          } else {
            result.resolve(body(tx) as T);
          }
          const response = await this.awaitResponse();
          if (response.status >= 500) throw new Rollback();
          await store(tx, this.claim, response);
        })
        .then(
          () => true,
          (error: unknown) => {
            if (!(error instanceof Rollback)) this.failure = error;
            result.reject(error);
            return false;
          },
        )
        .finally(() => {
          this.scope.closed = true;
        });
      return result.promise;
    }

    private async awaitResponse(): Promise<StoredResponse> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Rollback()), RESPONSE_WAIT_MS);
      });
      try {
        return await Promise.race([this.response.promise, timeout]);
      } finally {
        clearTimeout(timer);
      }
    }

    /** From onSend: the response as it will leave. Resolves once it may leave (committed, or stored). */
    async hand(response: StoredResponse, request: FastifyRequest): Promise<void> {
      if (this.storesNothing) return;
      if (this.outcome) {
        this.response.resolve(response);
        if (await this.outcome) {
          for (const effect of this.scope.afterCommit.splice(0)) {
            try {
              await effect();
            } catch (error) {
              request.log.error({ err: error }, 'an effect after commit failed');
            }
          }
          return;
        }
        // Rolled back: a success must not leave (its writes are gone), a server error stays unstored…
        if (response.status < 400) throw this.failure ?? new Error('The request could not be committed');
        if (response.status >= 500) return;
        // …and a 4xx whose transaction an SQL error aborted is stored on its own (nothing was written).
      } else if (response.status >= 500) {
        return;
      }
      // No transaction: a deferred route that wrote nothing, or an error before the handler ran.
      await store(db, this.claim, response);
    }

    abandon(): void {
      this.response.reject(new Rollback());
    }
  }

  const claimOrReplay = async (request: FastifyRequest, reply: FastifyReply) => {
    // A session of a user with no organization has nowhere to keep a response (and no route to call).
    if (request.method !== 'POST' || !request.principal?.credential.organizationUid) return;
    if (request.routeOptions.config.idempotency === 'none') return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    if (typeof header !== 'string' || header.length === 0 || header.length > 255) {
      throw new AppError('invalid_parameter', 'Idempotency-Key must be 1 to 255 characters', [
        { field: 'Idempotency-Key', message: 'must be 1 to 255 characters' },
      ]);
    }
    if (isUnsafeText(header)) {
      throw new AppError('invalid_parameter', `Idempotency-Key ${UNSAFE_TEXT_MESSAGE}`, [
        { field: 'Idempotency-Key', message: UNSAFE_TEXT_MESSAGE },
      ]);
    }
    const c: IdempotencyClaim = {
      organizationUid: request.principal.credential.organizationUid,
      // The key's uid, or the session's: a response is replayed only to the credential that made it.
      apiKeyUid: request.principal.credential.uid,
      method: request.method,
      // Without its trailing slash: the router serves `/x/` as `/x` (ignoreTrailingSlash), so keeping the
      // slash let a retry to `/x/` run the request a second time instead of replaying it.
      path: request.url.split('?')[0]!.replace(/(.)\/+$/, '$1'),
      key: header,
      hash: requestHash(request),
    };
    if (running.has(identity(c))) throw inUse();
    const stored = await findStored(db, c);
    if (stored) {
      if (stored.request_hash !== c.hash) {
        throw new AppError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request body',
        );
      }
      return replay(reply, stored);
    }
    running.add(identity(c));
    request.idempotency = new UnitOfWork(c, request.routeOptions.config.idempotency ?? 'transaction');
  };

  const release = (request: FastifyRequest) => {
    const unit = request.idempotency;
    if (!unit) return;
    running.delete(identity(unit.claim));
    unit.abandon();
  };

  const record = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const unit = request.idempotency;
    if (!unit || unit.recorded) return payload;
    unit.recorded = true;
    let body =
      typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
    const omit = request.routeOptions.config.idempotencyOmitDataField;
    if (omit && body) {
      try {
        const parsed = JSON.parse(body) as { data?: Record<string, unknown> };
        if (parsed.data) delete parsed.data[omit];
        body = JSON.stringify(parsed);
      } catch {
        body = '';
      }
    }
    const contentType = reply.getHeader('content-type');
    try {
      await unit.hand(
        { status: reply.statusCode, body, contentType: typeof contentType === 'string' ? contentType : null },
        request,
      );
    } finally {
      release(request);
    }
    return payload;
  };

  // Only POST routes carry the hooks: every other request pays nothing for idempotency.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    const asList = <T>(hook: T | T[] | undefined): T[] =>
      hook === undefined ? [] : Array.isArray(hook) ? hook : [hook];
    route.preHandler = [...asList(route.preHandler), claimOrReplay] as typeof route.preHandler;
    route.onSend = [...asList(route.onSend), record] as typeof route.onSend;
    // Callback-style hooks must call `done`: a plain function that does not stopped the hooks after it,
    // and Fastify's own "request completed" line, on every POST.
    const releaseOnResponse = (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
      release(request);
      done();
    };
    const releaseOnAbort = (request: FastifyRequest, done: () => void) => {
      release(request);
      done();
    };
    route.onResponse = [...asList(route.onResponse), releaseOnResponse] as typeof route.onResponse;
    route.onRequestAbort = [...asList(route.onRequestAbort), releaseOnAbort] as typeof route.onRequestAbort;
    const handler = route.handler;
    route.handler = function idempotentHandler(this: FastifyInstance, request, reply) {
      const unit = request.idempotency;
      if (!unit || reply.sent) return handler.call(this, request, reply);
      return unit.run(reply, () => handler.call(this, request, reply));
    } as typeof route.handler;
  });
}

/** Deletes responses kept past their 24 hours (run by a periodic job). */
export async function purgeExpiredIdempotencyKeys(db: Db): Promise<void> {
  await rawQuery(db, `delete from idempotency_keys where expires_at <= now()`);
}

export const IDEMPOTENCY_PURGE_QUEUE = 'remit.maintenance';

/** Hourly: stored replays past their expiry are deleted. */
export async function registerIdempotencyJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  await deps.jobs.define(IDEMPOTENCY_PURGE_QUEUE, async () => {
    await purgeExpiredIdempotencyKeys(deps.database.db);
    log.debug('maintenance: expired idempotency keys purged');
  });
  await deps.jobs.schedule(IDEMPOTENCY_PURGE_QUEUE, '17 * * * *');
}

export default fp(idempotencyPlugin, { name: 'remit-idempotency' });
