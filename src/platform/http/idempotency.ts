import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { rawQuery, type Db } from '../db/client.ts';
import { isUnsafeText, UNSAFE_TEXT_MESSAGE } from './text-safety.ts';
import { AppError } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Strip this member of `data` from the stored response (the plaintext of a new API key). */
    idempotencyOmitDataField?: string;
  }
  interface FastifyRequest {
    idempotencyClaim: IdempotencyClaim | null;
  }
}

interface IdempotencyClaim {
  organizationUid: string;
  apiKeyUid: string;
  method: string;
  path: string;
  key: string;
}

const RETENTION_HOURS = 24;
// A claim whose request never answered (the process died mid-request) is given up after this long.
const ABANDONED_AFTER_S = 120;

/** JSON with sorted object keys, so the same body written in another key order hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
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
  is_abandoned: boolean;
}

async function idempotencyPlugin(app: FastifyInstance, options: { db: Db }) {
  const { db } = options;
  app.decorateRequest('idempotencyClaim', null);

  const claim = async (c: IdempotencyClaim, hash: string): Promise<boolean> => {
    const rows = await rawQuery(
      db,
      `insert into idempotency_keys
         (organization_uid, api_key_uid, method, path, idempotency_key, request_hash, state, expires_at)
       values ($1, $2, $3, $4, $5, $6, 'in_flight', now() + interval '${RETENTION_HOURS} hours')
       on conflict do nothing returning 1 as claimed`,
      [c.organizationUid, c.apiKeyUid, c.method, c.path, c.key, hash],
    );
    return rows.length === 1;
  };
  const keyParams = (c: IdempotencyClaim) => [c.organizationUid, c.apiKeyUid, c.method, c.path, c.key];
  const WHERE = `organization_uid = $1 and api_key_uid = $2 and method = $3 and path = $4 and idempotency_key = $5`;

  const claimOrReplay = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== 'POST' || !request.principal) return;
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
      organizationUid: request.principal.apiKeyOrganizationUid,
      apiKeyUid: request.principal.apiKeyUid,
      method: request.method,
      // Without its trailing slash: the router serves `/x/` as `/x` (ignoreTrailingSlash), so keeping the
      // slash let a retry to `/x/` run the request a second time instead of replaying it.
      path: request.url.split('?')[0]!.replace(/(.)\/+$/, '$1'),
      key: header,
    };
    const hash = requestHash(request);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (await claim(c, hash)) {
        request.idempotencyClaim = c;
        return;
      }
      const [row] = await rawQuery<StoredRow>(
        db,
        `select request_hash, state, response_status, response_body, response_content_type,
                expires_at <= now() as is_expired,
                (state = 'in_flight' and created_at < now() - interval '${ABANDONED_AFTER_S} seconds') as is_abandoned
           from idempotency_keys where ${WHERE}`,
        keyParams(c),
      );
      if (!row) continue; // deleted between our insert and select: try to claim again
      if (row.is_expired || row.is_abandoned) {
        await rawQuery(db, `delete from idempotency_keys where ${WHERE}`, keyParams(c));
        continue;
      }
      if (row.request_hash !== hash) {
        throw new AppError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request body',
        );
      }
      if (row.state === 'in_flight') {
        throw new AppError(
          'idempotency_key_in_use',
          'A request with this Idempotency-Key is still being processed',
        );
      }
      reply.header('Idempotent-Replayed', 'true');
      // A replayed error body carries the first request's id; say so, as Stripe's Original-Request does.
      const original = /"request_id":"([\w.:-]{1,128})"/.exec(row.response_body ?? '');
      if (original) reply.header('Original-Request', original[1]);
      if (row.response_content_type) reply.header('content-type', row.response_content_type);
      return reply.code(row.response_status ?? 200).send(row.response_body ?? '');
    }
    throw new AppError(
      'idempotency_key_in_use',
      'A request with this Idempotency-Key is still being processed',
    );
  };

  const record = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const c = request.idempotencyClaim;
    if (!c) return payload;
    request.idempotencyClaim = null;
    if (reply.statusCode >= 500) {
      // A server failure is not a result: the client may retry it with the same key.
      await rawQuery(db, `delete from idempotency_keys where ${WHERE}`, keyParams(c));
      return payload;
    }
    let stored =
      typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
    const omit = request.routeOptions.config.idempotencyOmitDataField;
    if (omit && stored) {
      try {
        const parsed = JSON.parse(stored) as { data?: Record<string, unknown> };
        if (parsed.data) delete parsed.data[omit];
        stored = JSON.stringify(parsed);
      } catch {
        stored = '';
      }
    }
    const contentType = reply.getHeader('content-type');
    await rawQuery(
      db,
      `update idempotency_keys set state = 'done', response_status = $6, response_body = $7,
              response_content_type = $8 where ${WHERE}`,
      [...keyParams(c), reply.statusCode, stored, typeof contentType === 'string' ? contentType : null],
    );
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
  });
}

/** Deletes responses kept past their 24 hours (run by a periodic job). */
export async function purgeExpiredIdempotencyKeys(db: Db): Promise<void> {
  await rawQuery(db, `delete from idempotency_keys where expires_at <= now()`);
}

export default fp(idempotencyPlugin, { name: 'remit-idempotency' });
