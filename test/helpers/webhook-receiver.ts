import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver on a real local HTTP server (127.0.0.1, a free port), scripted per request: each
 * answer is taken from `script` in order (then `fallback`). It records every request as received.
 */
export type ReceiverAnswer = { status: number; body?: string } | 'hang';

export interface ReceivedWebhook {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as received (what the signature covers). */
  body: string;
  json: { type: string; timestamp: string; data: Record<string, unknown> };
}

export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  script: ReceiverAnswer[] = [];
  fallback: ReceiverAnswer = { status: 200, body: 'ok' };
  /** Paths whose requests are held unanswered (whatever the script says) until `release`. */
  readonly holding = new Set<string>();
  private readonly held = new Map<string, http.ServerResponse[]>();
  private readonly hanging = new Set<http.ServerResponse>();
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<WebhookReceiver> {
    const holder: { self?: WebhookReceiver } = {};
    const server = http.createServer((request, response) => holder.self!.handle(request, response));
    const self = new WebhookReceiver(server);
    holder.self = self;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  on(path: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.path === path);
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse) {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      this.received.push({
        path: request.url ?? '',
        headers: request.headers,
        body,
        json: JSON.parse(body) as ReceivedWebhook['json'],
      });
      const path = request.url ?? '';
      if (this.holding.has(path)) {
        this.held.set(path, [...(this.held.get(path) ?? []), response]);
        this.hanging.add(response);
        return;
      }
      const answer = this.script.shift() ?? this.fallback;
      if (answer === 'hang') {
        this.hanging.add(response);
        return;
      }
      response.writeHead(answer.status, { 'content-type': 'text/plain' });
      response.end(answer.body ?? '');
    });
  }

  /** How many requests to `path` are held unanswered now. */
  heldOn(path: string): number {
    return (this.held.get(path) ?? []).filter((response) => !response.writableEnded && !response.destroyed)
      .length;
  }

  /** Stops holding `path`: its held requests are answered 200, later ones as the script says. */
  release(path: string): void {
    this.holding.delete(path);
    for (const response of this.held.get(path) ?? []) {
      this.hanging.delete(response);
      if (!response.destroyed) response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    }
    this.held.delete(path);
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
