import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OpenAI-compatible chat API on a real local HTTP server (127.0.0.1, a free port), scripted by the
 * test. It answers `POST /v1/chat/completions` (the path the openai client uses with a base URL ending
 * in `/v1`) and `POST /chat/completions` (a base URL without it); anything else is 404.
 */
export type LlmBehaviour =
  /** 200 with a chat completion whose message content is `content` (default: a JSON email). */
  | { kind: 'succeed'; content?: string; usage?: { prompt_tokens: number; completion_tokens: number } }
  /** An HTTP error with an OpenAI-style error body. */
  | { kind: 'fail'; status: number }
  /** Never answers (the socket stays open until the server closes). */
  | { kind: 'hang' }
  /** Answers as `succeed` once `until` resolves: a model call the test holds open, then lets go. */
  | { kind: 'hold'; until: Promise<void> }
  /** 200 with the message `reply` makes of the request: a tool-calling conversation scripted by the test. */
  | { kind: 'chat'; reply: (request: LlmRequest) => { content?: string | null; tool_calls?: unknown[] } }
  /** 200 with a body that is not a chat completion at all. */
  | { kind: 'garbage'; body: string; contentType?: string };

export interface LlmRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the request body is checked field by field
  json: any;
}

export const DEFAULT_EMAIL = { subject: 'Generated subject', body_text: 'Generated body\n\nSee **this**.' };

export class FakeLlm {
  readonly requests: LlmRequest[] = [];
  behaviour: LlmBehaviour = { kind: 'succeed' };
  private server: http.Server | undefined;
  private port = 0;

  /** The base URL to configure as `LLM_BASE_URL`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.answer(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  private answer(req: http.IncomingMessage, body: string, res: http.ServerResponse) {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    this.requests.push({ method: req.method, url: req.url ?? '', headers: req.headers, json });
    const b = this.behaviour;
    switch (b.kind) {
      case 'hang':
        return;
      case 'hold':
        void b.until.then(() => this.succeed(res, json, { kind: 'succeed' }));
        return;
      case 'fail':
        res
          .writeHead(b.status, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'upstream exploded', type: 'server_error' } }));
        return;
      case 'garbage':
        res.writeHead(200, { 'content-type': b.contentType ?? 'text/html' }).end(b.body);
        return;
      case 'succeed':
        this.succeed(res, json, b);
        return;
      case 'chat': {
        const message = b.reply(this.requests.at(-1)!);
        this.complete(
          res,
          json,
          { role: 'assistant', content: message.content ?? null, tool_calls: message.tool_calls },
          message.tool_calls?.length ? 'tool_calls' : 'stop',
          { prompt_tokens: 10, completion_tokens: 5 },
        );
        return;
      }
    }
  }

  private succeed(
    res: http.ServerResponse,
    json: unknown,
    b: Extract<LlmBehaviour, { kind: 'succeed' }>,
  ): void {
    const message = { role: 'assistant', content: b.content ?? JSON.stringify(DEFAULT_EMAIL) };
    this.complete(res, json, message, 'stop', b.usage ?? { prompt_tokens: 120, completion_tokens: 45 });
  }

  private complete(
    res: http.ServerResponse,
    json: unknown,
    message: Record<string, unknown>,
    finishReason: string,
    usage: { prompt_tokens: number; completion_tokens: number },
  ): void {
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: (json as { model?: string } | undefined)?.model ?? 'fake',
        choices: [{ index: 0, message, finish_reason: finishReason }],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
    );
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}
