import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deliverDueWebhooks, webhookOptionsOf } from '../../../src/modules/webhooks/webhooks.service.ts';
import { MemoryRateLimiter } from '../../../src/platform/http/rate-limit.ts';
import { createTestApp, secondInstance, type TestApp } from '../../../test/helpers/app.ts';
import { setPasswordByEmail } from '../../../test/helpers/people.ts';
import { createPrincipals, type Principals } from '../../../test/helpers/principals.ts';
import { WebhookReceiver } from '../../../test/helpers/webhook-receiver.ts';
import {
  createRemitClient,
  RemitApiError,
  signIn,
  verifyWebhook,
  WebhookVerificationError,
  type RemitClientOptions,
} from '../src/index.ts';
import { schemaSource } from '../scripts/schema-source.ts';

/**
 * @remit/client against a live Remit: the real app listening on a free local port, called with real
 * fetch (docs/client.md). Failures between the two (503, dropped connections) come from a small proxy in
 * front of it; waits before retries go through an injected sleep, so nothing here waits for real.
 */

let t: TestApp;
let p: Principals;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
});

/** A client that records its waits instead of waiting. */
function clientWith(options: Partial<RemitClientOptions> & { url?: string } = {}) {
  const slept: number[] = [];
  const remit = createRemitClient({
    baseUrl: options.url ?? baseUrl,
    apiKey: p.orgA.admin.key,
    sleep: async (ms) => {
      slept.push(ms);
    },
    ...options,
  } as RemitClientOptions);
  return { remit, slept };
}

const tag = () => crypto.randomBytes(4).toString('hex');

/**
 * A proxy in front of the app that plays its script, one step per request, then forwards: answer a
 * status itself, drop the connection before forwarding, or forward and drop the connection instead of
 * answering (the server did the work; the client never hears).
 */
type Step = { status: number; retryAfter?: string } | 'drop' | 'forward-then-drop';
class FlakyProxy {
  script: Step[] = [];
  always: Step | undefined;
  readonly seen: { method: string; url: string; headers: http.IncomingHttpHeaders }[] = [];
  private constructor(
    private readonly server: http.Server,
    private readonly target: string,
  ) {}

  static async start(target: string): Promise<FlakyProxy> {
    const holder: { self?: FlakyProxy } = {};
    const server = http.createServer((request, response) => void holder.self!.handle(request, response));
    holder.self = new FlakyProxy(server, target);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return holder.self;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  keysSeen(): (string | undefined)[] {
    return this.seen.map((s) => s.headers['idempotency-key'] as string | undefined);
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    this.seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers });
    const step = this.script.shift() ?? this.always;
    if (step === 'drop') {
      request.socket.destroy();
      return;
    }
    if (step && step !== 'forward-then-drop') {
      response.writeHead(step.status, {
        'content-type': 'text/plain',
        ...(step.retryAfter ? { 'retry-after': step.retryAfter } : {}),
      });
      response.end('proxy says no');
      return;
    }
    const headers = { ...request.headers };
    delete headers.host;
    delete headers.connection;
    const answer = await fetch(`${this.target}${request.url}`, {
      method: request.method,
      headers: headers as Record<string, string>,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    });
    const body = Buffer.from(await answer.arrayBuffer());
    if (step === 'forward-then-drop') {
      request.socket.destroy();
      return;
    }
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    response.end(body);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('generated types', () => {
  // The committed types must be what the generator makes of the document the service serves now, so a
  // route's schema cannot change without them (a CI failure names the command to run).
  it('packages/client/src/schema.ts is up to date with the OpenAPI document', async () => {
    const generated = await schemaSource(t.app.swagger());
    const committed = await fs.readFile(new URL('../src/schema.ts', import.meta.url), 'utf8');
    if (generated === committed) return;
    const fresh = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'remit-client-schema-')), 'schema.ts');
    await fs.writeFile(fresh, generated);
    const [was, now] = [committed.split('\n'), generated.split('\n')];
    const at = was.findIndex((line, i) => line !== now[i]);
    expect.fail(
      'packages/client/src/schema.ts is stale against the OpenAPI document: run `npm run client:generate` ' +
        `and commit it. First difference, line ${at + 1}: ${JSON.stringify(was[at])} → ` +
        `${JSON.stringify(now[at])}; the fresh file: ${fresh}`,
    );
  });
});

describe('authentication', () => {
  it('an API key: the call answers the typed body', async () => {
    const { remit } = clientWith();
    const me = await remit.GET('/api/me');
    expect(me.data.authenticated_with).toBe('api_key');
    expect(me.data.user.email).toBe(p.orgA.admin.email);
  });

  it('a session: sign in, read, and write (cookie and X-CSRF-Token sent for the caller)', async () => {
    const password = 'a long enough password 1';
    await setPasswordByEmail(t, p.orgA.member.email, password);
    const { session, user } = await signIn(baseUrl, { email: p.orgA.member.email, password });
    expect(user.email).toBe(p.orgA.member.email);
    expect(session.cookie).toMatch(/^remit_session=/);

    const remit = createRemitClient({ baseUrl, session });
    const me = await remit.GET('/api/me');
    expect(me.data.authenticated_with).toBe('session');
    const name = `Session party ${tag()}`;
    const created = await remit.POST('/api/parties', { body: { name, role: 'client' } });
    expect(created.data).toMatchObject({ name, role: 'client' });
    const read = await remit.GET('/api/parties/{uid}', { params: { path: { uid: created.data.uid } } });
    expect(read.data.name).toBe(name);

    // Without the session's token a write is refused as a possible forgery.
    const forged = createRemitClient({ baseUrl, session: { ...session, csrfToken: 'x'.repeat(43) } });
    const refused = await forged.POST('/api/parties', { body: { name, role: 'client' } }).catch((e) => e);
    expect(refused).toBeInstanceOf(RemitApiError);
    expect(refused).toMatchObject({ status: 403, code: 'csrf_failed' });
  });

  it('a wrong password is a typed error', async () => {
    const failed = await signIn(baseUrl, { email: p.orgA.admin.email, password: 'not the password 1' }).catch(
      (e) => e,
    );
    expect(failed).toBeInstanceOf(RemitApiError);
    expect(failed).toMatchObject({ status: 401, code: 'invalid_credentials' });
  });
});

describe('idempotency and retries', () => {
  let proxy: FlakyProxy;
  beforeAll(async () => {
    proxy = await FlakyProxy.start(baseUrl);
  });
  afterAll(async () => {
    await proxy?.close();
  });
  const reset = () => {
    proxy.script = [];
    proxy.always = undefined;
    proxy.seen.length = 0;
  };

  async function partiesNamed(name: string) {
    const { remit } = clientWith();
    const list = await remit.GET('/api/parties', { params: { query: { q: name } } });
    return list.data.items.filter((party) => party.name === name);
  }

  it('a POST carries a new Idempotency-Key; a 503 with Retry-After is retried after it, with the same key', async () => {
    reset();
    proxy.script = [{ status: 503, retryAfter: '2' }];
    const { remit, slept } = clientWith({ url: proxy.url });
    const name = `Retried party ${tag()}`;
    const created = await remit.POST('/api/parties', { body: { name, role: 'vendor' } });
    expect(created.data.name).toBe(name);
    expect(slept).toEqual([2000]);
    const keys = proxy.keysSeen();
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    // The next POST gets a key of its own.
    await remit.POST('/api/parties', { body: { name: `${name} 2`, role: 'vendor' } });
    expect(proxy.keysSeen()[2]).not.toBe(keys[0]);
  });

  it("the caller's own key is sent as given", async () => {
    reset();
    const { remit } = clientWith({ url: proxy.url });
    const key = `my-key-${tag()}`;
    await remit.POST('/api/parties', {
      params: { header: { 'Idempotency-Key': key } },
      body: { name: `Keyed party ${key}`, role: 'client' },
    });
    expect(proxy.keysSeen()).toEqual([key]);
  });

  it('a POST whose answer was lost is retried with its key and replayed: done once', async () => {
    reset();
    proxy.script = ['forward-then-drop'];
    const { remit, slept } = clientWith({ url: proxy.url });
    const name = `Once party ${tag()}`;
    const { data, response } = await remit.raw.POST('/api/parties', { body: { name, role: 'client' } });
    expect(data?.data.name).toBe(name);
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(slept).toHaveLength(1);
    expect(proxy.keysSeen()[1]).toBe(proxy.keysSeen()[0]);
    expect(await partiesNamed(name)).toHaveLength(1);
  });

  it('a PATCH is not retried after a network error (no key makes a repeat safe)', async () => {
    reset();
    const { remit: direct } = clientWith();
    const party = await direct.POST('/api/parties', { body: { name: `Patched ${tag()}`, role: 'client' } });
    proxy.script = ['drop'];
    const { remit, slept } = clientWith({ url: proxy.url });
    await expect(
      remit.PATCH('/api/parties/{uid}', {
        params: { path: { uid: party.data.uid } },
        body: { name: 'Renamed' },
      }),
    ).rejects.toThrow(TypeError);
    expect(slept).toEqual([]);
    expect(proxy.seen).toHaveLength(1);
  });

  it('retries are bounded: after maxRetries the last answer is thrown', async () => {
    reset();
    proxy.always = { status: 503 };
    const { remit, slept } = clientWith({ url: proxy.url, maxRetries: 2 });
    const failed = await remit.GET('/api/me').catch((e) => e);
    expect(failed).toBeInstanceOf(RemitApiError);
    // The proxy's answer is not Remit's error body.
    expect(failed).toMatchObject({ status: 503, code: 'unexpected_response' });
    expect(proxy.seen).toHaveLength(3);
    expect(slept).toEqual([500, 1000]);
  });

  it('a Retry-After given as an HTTP date is waited until, by the injected clock', async () => {
    reset();
    const now = Date.parse('2026-11-26T10:00:00Z');
    proxy.script = [{ status: 429, retryAfter: new Date(now + 5_000).toUTCString() }];
    const { remit, slept } = clientWith({ url: proxy.url, now: () => now });
    await remit.GET('/api/me');
    expect(slept).toEqual([5_000]);
  });

  it("a real 429 waits the server's Retry-After, then succeeds; a longer wait than allowed is thrown", async () => {
    // Another instance over the same database, allowing one request a minute per key.
    const limited = await secondInstance(t, { rateLimiter: new MemoryRateLimiter(1, 60_000) });
    try {
      await limited.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(limited.app.server.address() as AddressInfo).port}`;
      vi.useFakeTimers({ toFake: ['Date'], now: new Date() });
      const slept: number[] = [];
      const remit = createRemitClient({
        baseUrl: url,
        apiKey: p.orgA.admin.key,
        // The wait moves the clock instead of taking time: the limiter's window ends.
        sleep: async (ms) => {
          slept.push(ms);
          vi.setSystemTime(Date.now() + ms);
        },
      });
      await remit.GET('/api/me');
      const me = await remit.GET('/api/me');
      expect(me.data.user.email).toBe(p.orgA.admin.email);
      expect(slept).toEqual([60_000]);

      const impatient = createRemitClient({ baseUrl: url, apiKey: p.orgA.admin.key, maxRetryDelayMs: 5_000 });
      const refused = await impatient.GET('/api/me').catch((e) => e);
      expect(refused).toBeInstanceOf(RemitApiError);
      expect(refused).toMatchObject({ status: 429, code: 'rate_limited', retryAfterS: 60 });
    } finally {
      vi.useRealTimers();
      await limited.close();
    }
  });
});

describe('pagination', () => {
  it('iterates every item of a list longer than a page, one page at a time as it is read', async () => {
    const name = `Paged ${tag()}`;
    const { remit } = clientWith();
    for (let i = 0; i < 5; i++)
      await remit.POST('/api/parties', { body: { name: `${name} ${i}`, role: 'client' } });

    const pages: string[] = [];
    const counting = createRemitClient({
      baseUrl,
      apiKey: p.orgA.admin.key,
      fetch: (request) => {
        pages.push(new URL(request.url).searchParams.get('page') ?? '');
        return fetch(request);
      },
    });
    const names: string[] = [];
    for await (const party of counting.paginate('/api/parties', {
      params: { query: { q: name, per_page: 2 } },
    })) {
      names.push(party.name);
    }
    expect(names.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${name} ${i}`));
    expect(pages).toEqual(['1', '2', '3']);

    // Lazy: stopping after the first item fetched one page only.
    pages.length = 0;
    for await (const party of counting.paginate('/api/parties', {
      params: { query: { q: name, per_page: 2 } },
    })) {
      expect(party.name).toContain(name);
      break;
    }
    expect(pages).toEqual(['1']);
  });

  it('lists whose items sit at the top level (the invoice lists) iterate the same way', async () => {
    const { remit } = clientWith();
    const prefix = `PG-${tag()}`;
    for (let i = 0; i < 3; i++) {
      await remit.POST('/api/invoices', {
        body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `${prefix}-${i}`, currency: 'USD' },
      });
    }
    const numbers: string[] = [];
    for await (const invoice of remit.paginate('/api/organization/{organization_uid}/ar-invoices', {
      params: { path: { organization_uid: p.orgA.uid }, query: { invoice_number: prefix, per_page: 2 } },
    })) {
      numbers.push(invoice.invoice_number);
    }
    expect(numbers.filter((n) => n.startsWith(prefix)).sort()).toEqual(
      [0, 1, 2].map((i) => `${prefix}-${i}`),
    );
  });
});

describe('errors', () => {
  it('a 404 is a RemitApiError with its code, message and request id', async () => {
    const { remit } = clientWith();
    const failed = await remit
      .GET('/api/invoices/{uid}', { params: { path: { uid: crypto.randomUUID() } } })
      .catch((e) => e);
    expect(failed).toBeInstanceOf(RemitApiError);
    const error = failed as RemitApiError;
    expect(error).toMatchObject({ status: 404, code: 'not_found', message: 'Invoice not found', errors: [] });
    expect(error.requestId).toMatch(/.+/);
  });

  it('a validation failure carries the field errors', async () => {
    const { remit } = clientWith();
    const failed = await remit
      // A role the types refuse, to see the server's answer.
      .POST('/api/parties', { body: { name: 'Bad role', role: 'supplier' as 'client' } })
      .catch((e) => e);
    expect(failed).toMatchObject({ status: 422, code: 'validation_failed' });
    expect((failed as RemitApiError).errors).toEqual([
      { field: 'role', message: expect.stringMatching(/client/) },
    ]);
  });

  it("another member's lack of a scope is missing_scope", async () => {
    const key = await p.keyWithScopes(['invoices:read']);
    const remit = createRemitClient({ baseUrl, apiKey: key });
    const failed = await remit
      .POST('/api/parties', { body: { name: 'No scope', role: 'client' } })
      .catch((e) => e);
    expect(failed).toMatchObject({ status: 403, code: 'missing_scope' });
  });
});

describe('webhooks', () => {
  // The Standard Webhooks specification's test vector.
  const VECTOR = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    body: '{"test": 2432232314}',
    headers: {
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    },
    at: new Date(1614265330 * 1000),
  };

  it("verifies the specification's test vector and refuses a wrong signature, secret or time", () => {
    expect(verifyWebhook(VECTOR.secret, VECTOR.body, VECTOR.headers, { now: VECTOR.at })).toEqual({
      test: 2432232314,
    });
    // A fetch Headers works as well as a plain object.
    expect(
      verifyWebhook(VECTOR.secret, VECTOR.body, new Headers(VECTOR.headers), { now: VECTOR.at }),
    ).toEqual({
      test: 2432232314,
    });
    const bad = (fn: () => unknown) => expect(fn).toThrow(WebhookVerificationError);
    bad(() => verifyWebhook(VECTOR.secret, '{"test": 2432232315}', VECTOR.headers, { now: VECTOR.at }));
    bad(() =>
      verifyWebhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, VECTOR.body, VECTOR.headers, {
        now: VECTOR.at,
      }),
    );
    // Six minutes later, and now: too old.
    bad(() =>
      verifyWebhook(VECTOR.secret, VECTOR.body, VECTOR.headers, {
        now: new Date(VECTOR.at.getTime() + 360_000),
      }),
    );
    bad(() => verifyWebhook(VECTOR.secret, VECTOR.body, VECTOR.headers));
    bad(() => verifyWebhook(VECTOR.secret, VECTOR.body, { ...VECTOR.headers, 'webhook-signature': '' }));
  });

  it('verifies a real delivery and answers the typed event; both secrets during a rotation', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const { remit } = clientWith();
      const organization_uid = p.orgA.uid;
      const endpoint = await remit.POST('/api/organization/{organization_uid}/webhook-endpoints', {
        params: { path: { organization_uid } },
        body: { url: receiver.url('/remit'), event_types: ['invoice.created'] },
      });
      const secret = endpoint.data.secret;
      const invoice = await remit.POST('/api/invoices', {
        body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `WH-${tag()}`, currency: 'USD' },
      });
      await deliverDueWebhooks(t.db, webhookOptionsOf(t.deps));
      const [delivery] = receiver.on('/remit');
      expect(delivery).toBeDefined();

      const event = verifyWebhook(secret, delivery!.body, delivery!.headers);
      expect(event.type).toBe('invoice.created');
      if (event.type !== 'invoice.created') throw new Error('narrowed above');
      expect(event.data.invoice.uid).toBe(invoice.data.uid);
      expect(event.data.invoice.total_cents).toBe(0);
      // Bytes as received work too; a body changed in transit does not.
      expect(verifyWebhook(secret, Buffer.from(delivery!.body), delivery!.headers)).toEqual(event);
      expect(() => verifyWebhook(secret, delivery!.body.replace('USD', 'EUR'), delivery!.headers)).toThrow(
        WebhookVerificationError,
      );

      const rotated = await remit.POST(
        '/api/organization/{organization_uid}/webhook-endpoints/{uid}/rotate-secret',
        { params: { path: { organization_uid, uid: endpoint.data.uid } } },
      );
      await remit.POST('/api/invoices', {
        body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: `WH-${tag()}`, currency: 'USD' },
      });
      await deliverDueWebhooks(t.db, webhookOptionsOf(t.deps));
      const second = receiver.on('/remit')[1]!;
      expect(verifyWebhook(secret, second.body, second.headers).type).toBe('invoice.created');
      expect(verifyWebhook(rotated.data.secret, second.body, second.headers).type).toBe('invoice.created');
      expect(verifyWebhook([rotated.data.secret, secret], second.body, second.headers).type).toBe(
        'invoice.created',
      );
    } finally {
      await receiver.close();
    }
  });
});
