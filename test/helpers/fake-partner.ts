import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A billing partner on a real local HTTP server (127.0.0.1, a free port), scripted per request by the
 * test. It behaves like a careful real partner: it checks the `Remit-Signature` header
 * (`t=<unix s>,v1=<hex HMAC-SHA-256(secret, "<t>.<raw body>")>`, ±5 min) and answers 401 without
 * applying anything when it does not match, and it honours `Idempotency-Key`: a key it has already
 * applied gets the stored answer again, without applying the body a second time.
 *
 * "The partner's state" is the last invoice body it applied per invoice uid.
 */

export type PartnerBehaviour =
  /** 200 `{"reference": …}` after applying the body. */
  | { kind: 'succeed'; reference?: string; before?: (request: PartnerRequest) => Promise<void> | void }
  /** Refuses with this status; nothing is applied. */
  | { kind: 'fail'; status: number }
  /** Never answers. With `apply`, the body is applied (and its key stored) first: "accepted, then lost". */
  | { kind: 'hang'; apply?: boolean };

export interface PartnerRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as received (what the signature covers). */
  body: string;
  /** The parsed body, when it is JSON. */
  json: SyncBody | undefined;
  idempotencyKey: string | undefined;
  signatureValid: boolean;
  /** Answered from the idempotency store; nothing applied. */
  replayed: boolean;
  /** What the partner did: applied, replayed, failed, refused (bad signature), hung. */
  outcome: 'applied' | 'replayed' | 'failed' | 'refused' | 'hung' | 'applied-then-hung';
  at: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the invoice body is compared field by field */
export interface SyncBody {
  event: string;
  revision: number;
  invoice: { uid: string; revision: number; [field: string]: any };
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export interface PartnerApplied {
  revision: number;
  idempotencyKey: string;
  invoice: SyncBody['invoice'];
  reference: string;
}

export function verifySignature(
  secret: string,
  header: string | undefined,
  rawBody: string,
  toleranceSeconds = 300,
): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(
    header.split(',').map((part) => {
      const i = part.indexOf('=');
      return [part.slice(0, i).trim(), part.slice(i + 1).trim()];
    }),
  );
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const expected = crypto.createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
  const given = String(parts.v1 ?? '');
  return (
    given.length === expected.length && crypto.timingSafeEqual(Buffer.from(given), Buffer.from(expected))
  );
}

export class FakePartner {
  readonly requests: PartnerRequest[] = [];
  /** Invoice uid → the last body applied. */
  readonly state = new Map<string, PartnerApplied>();
  private readonly answers = new Map<string, { status: number; body: string }>();
  private readonly queue: PartnerBehaviour[] = [];
  private fallback: PartnerBehaviour = { kind: 'succeed' };
  private readonly hung = new Set<http.ServerResponse>();
  private readonly waiters: { count: number; resolve: () => void }[] = [];
  private counter = 0;

  private constructor(
    private readonly server: http.Server,
    readonly secret: string,
  ) {}

  static async start(secret: string): Promise<FakePartner> {
    const server = http.createServer();
    const partner = new FakePartner(server, secret);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      // A failing test hook must not become an unhandled rejection: drop the connection instead.
      partner.handle(req, res).catch((error: Error) => res.destroy(error));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return partner;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The endpoint to configure, on 127.0.0.1 (or another host name that resolves to it). */
  url(host = '127.0.0.1', path = '/remit/invoices'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** The next requests, in order, behave like this; afterwards the default applies. */
  next(...behaviours: PartnerBehaviour[]): this {
    this.queue.push(...behaviours);
    return this;
  }

  /** What every request without a queued behaviour does (initially: succeed). */
  always(behaviour: PartnerBehaviour): this {
    this.fallback = behaviour;
    this.queue.length = 0;
    return this;
  }

  /** Forgets the script (back to "succeed"); recorded requests and state are kept. */
  reset(): this {
    return this.always({ kind: 'succeed' });
  }

  requestsFor(invoiceUid: string): PartnerRequest[] {
    return this.requests.filter((r) => r.json?.invoice?.uid === invoiceUid);
  }

  /** Resolves once `count` requests in all have arrived (for assertions about a hung request). */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    let json: SyncBody | undefined;
    try {
      json = JSON.parse(body) as SyncBody;
    } catch {
      json = undefined;
    }
    const headerValue = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const record: PartnerRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body,
      json,
      idempotencyKey: headerValue('idempotency-key'),
      signatureValid: verifySignature(this.secret, headerValue('remit-signature'), body),
      replayed: false,
      outcome: 'applied',
      at: Date.now(),
    };
    this.requests.push(record);
    for (const w of this.waiters.filter((w) => this.requests.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
    const send = (status: number, payload: unknown) => {
      const text = JSON.stringify(payload);
      res.writeHead(status, { 'content-type': 'application/json' }).end(text);
      return text;
    };

    if (!record.signatureValid) {
      record.outcome = 'refused';
      send(401, { error: 'bad signature' });
      return;
    }
    const key = record.idempotencyKey;
    const stored = key ? this.answers.get(key) : undefined;
    if (stored) {
      record.replayed = true;
      record.outcome = 'replayed';
      res.writeHead(stored.status, { 'content-type': 'application/json' }).end(stored.body);
      return;
    }
    const behaviour = this.queue.shift() ?? this.fallback;
    if (behaviour.kind === 'fail') {
      record.outcome = 'failed';
      send(behaviour.status, { error: `scripted failure ${behaviour.status}` });
      return;
    }
    if (behaviour.kind === 'hang') {
      record.outcome = behaviour.apply ? 'applied-then-hung' : 'hung';
      if (behaviour.apply) this.apply(record, undefined);
      this.hung.add(res);
      res.on('close', () => this.hung.delete(res));
      return;
    }
    if (behaviour.before) await behaviour.before(record);
    const reference = this.apply(record, behaviour.reference);
    if (reference === undefined) {
      record.outcome = 'failed';
      send(400, { error: 'not an invoice sync body' });
      return;
    }
    send(200, { reference, received_revision: json?.revision });
  }

  /** Applies a sync body and stores its answer under its idempotency key; the reference, or undefined. */
  private apply(record: PartnerRequest, reference: string | undefined): string | undefined {
    const json = record.json;
    if (!json?.invoice?.uid || typeof json.revision !== 'number') return undefined;
    const previous = this.state.get(json.invoice.uid);
    const ref = reference ?? previous?.reference ?? `bill_${(++this.counter).toString().padStart(6, '0')}`;
    this.state.set(json.invoice.uid, {
      revision: json.revision,
      idempotencyKey: record.idempotencyKey ?? '',
      invoice: json.invoice,
      reference: ref,
    });
    if (record.idempotencyKey) {
      this.answers.set(record.idempotencyKey, {
        status: 200,
        body: JSON.stringify({ reference: ref, received_revision: json.revision }),
      });
    }
    return ref;
  }
}
