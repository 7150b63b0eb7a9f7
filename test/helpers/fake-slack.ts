import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The Slack Web API on a real local HTTP server (127.0.0.1, a free port), for `SLACK_API_URL`. It
 * answers the two methods the service calls, the way Slack does: always HTTP 200 with `{ok: true, …}`
 * or `{ok: false, error: "<code>"}`, unless a behaviour says otherwise.
 *
 * - `POST /conversations.info` `{channel}` → `{ok: true, channel: {id, is_member, is_archived}}` for a
 *   channel in `channels`, `{ok: false, error: "channel_not_found"}` for any other.
 * - `POST /chat.postMessage` `{channel, text}` → records `{channel, text, token, ts}` in `messages` and
 *   answers `{ok: true, channel, ts}`. Like Slack it refuses an unknown channel (`channel_not_found`),
 *   a channel the bot is not in (`not_in_channel`), an archived one (`is_archived`) and an empty text
 *   (`no_text`); refused messages are not recorded.
 *
 * Authentication: `Authorization: Bearer <token>` (or a `token` parameter, as Slack also allows).
 * None → `not_authed`; another token → `invalid_auth`. Both still HTTP 200, as Slack answers them.
 *
 * Parameters are read as Slack reads them: the query string, an `application/x-www-form-urlencoded`
 * body, and an `application/json` body — the last only for the methods that accept JSON
 * (`chat.postMessage`; Slack's read methods such as `conversations.info` ignore a JSON body, so a
 * client sending one gets `channel_not_found`). Every request is kept in `requests`, whatever came of it.
 *
 * `behaviour` scripts `chat.postMessage`, `infoBehaviour` scripts `conversations.info`:
 * `{kind: 'succeed'}` (default), `{kind: 'fail', error}` (HTTP 200, `ok: false`), `{kind: 'http',
 * status}` (an HTTP error with a non-API body, e.g. 500 or 429) or `{kind: 'hang'}` (never answers).
 */
export type SlackBehaviour =
  | { kind: 'succeed' }
  /** HTTP 200 `{ok: false, error}`: e.g. `ratelimited`, `channel_not_found`, `msg_too_long`. */
  | { kind: 'fail'; error: string }
  /** An HTTP error status (500, 503, 429 …) with a body that is not a Web API reply. */
  | { kind: 'http'; status: number }
  /** Never answers; the socket stays open until the caller gives up or the server closes. */
  | { kind: 'hang' };

export interface FakeChannel {
  /** Whether the bot has joined (`is_member`). */
  isMember: boolean;
  isArchived?: boolean;
}

export interface SlackRequest {
  /** The Web API method, e.g. `chat.postMessage`. */
  method: string;
  httpMethod: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  contentType: string;
  /** The token presented (header or parameter), if any. */
  token: string | undefined;
  /** The arguments Slack would see (see above: JSON only for JSON methods). */
  params: Record<string, unknown>;
  /** The raw body as received. */
  body: string;
  /** What the fake answered: HTTP status and the `error` code when `ok` was false. */
  status: number | 'hung';
  error?: string | undefined;
  at: number;
}

export interface SlackMessage {
  channel: string;
  text: string;
  token: string;
  ts: string;
}

/** Methods whose arguments Slack accepts as a JSON body. */
const JSON_METHODS = new Set(['chat.postMessage', 'chat.update', 'chat.postEphemeral']);

export class FakeSlack {
  /** The bot token the fake accepts; configure it as `SLACK_BOT_TOKEN`. */
  readonly token: string;
  /** Channels that exist, by id, and whether the bot is in them. Edit freely during a test. */
  readonly channels = new Map<string, FakeChannel>();
  /** Messages posted successfully, in order. */
  readonly messages: SlackMessage[] = [];
  /** Every request received, in order. */
  readonly requests: SlackRequest[] = [];
  /** What `chat.postMessage` does. */
  behaviour: SlackBehaviour = { kind: 'succeed' };
  /** What `conversations.info` does. */
  infoBehaviour: SlackBehaviour = { kind: 'succeed' };
  private server: http.Server | undefined;
  private port = 0;
  private counter = 0;
  private readonly hung = new Set<http.ServerResponse>();
  private readonly waiters: { count: number; resolve: () => void }[] = [];

  constructor(token = `xoxb-fake-${crypto.randomBytes(6).toString('hex')}`) {
    this.token = token;
  }

  /** The base URL to configure as `SLACK_API_URL` (methods are `<url>/<method>`). */
  get url(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  /** The environment that points the service at this fake. */
  env(): Record<string, string> {
    return { SLACK_BOT_TOKEN: this.token, SLACK_API_URL: this.url };
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

  /** Adds (or replaces) a channel; returns its id. */
  channel(id: string, isMember = true, isArchived = false): string {
    this.channels.set(id, { isMember, isArchived });
    return id;
  }

  /** Requests for one Web API method. */
  requestsFor(method: string): SlackRequest[] {
    return this.requests.filter((r) => r.method === method);
  }

  /** Messages posted to one channel. */
  messagesIn(channel: string): SlackMessage[] {
    return this.messages.filter((m) => m.channel === channel);
  }

  /** Resolves once `count` messages in all have been posted, or rejects after `timeoutMs`. */
  waitForMessages(count: number, timeoutMs = 10_000): Promise<void> {
    if (this.messages.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = { count, resolve: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`FakeSlack: ${this.messages.length} of ${count} messages after ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Back to "succeed" for both methods; channels, messages and requests are kept. */
  reset(): this {
    this.behaviour = { kind: 'succeed' };
    this.infoBehaviour = { kind: 'succeed' };
    return this;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private answer(req: http.IncomingMessage, body: string, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = url.pathname.replace(/^\/api\//, '').replace(/^\//, '');
    const contentType = String(req.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    if (contentType === 'application/x-www-form-urlencoded')
      Object.assign(params, Object.fromEntries(new URLSearchParams(body)));
    else if (contentType === 'application/json' && JSON_METHODS.has(method)) {
      try {
        const json: unknown = JSON.parse(body);
        if (json && typeof json === 'object' && !Array.isArray(json)) Object.assign(params, json);
      } catch {
        // Slack answers `invalid_json`; see below.
        params.__invalid_json = true;
      }
    }
    const header = req.headers.authorization;
    const token = header?.startsWith('Bearer ')
      ? header.slice('Bearer '.length)
      : typeof params.token === 'string'
        ? params.token
        : undefined;
    const record: SlackRequest = {
      method,
      httpMethod: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      contentType,
      token,
      params,
      body,
      status: 200,
      at: Date.now(),
    };
    this.requests.push(record);

    const reply = (payload: Record<string, unknown>) => {
      record.error = payload.ok === false ? String(payload.error) : undefined;
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(payload));
    };
    const known = method === 'conversations.info' || method === 'chat.postMessage';
    if (!known) {
      // Slack answers unknown methods with HTTP 404 and `unknown_method`.
      record.status = 404;
      record.error = 'unknown_method';
      res
        .writeHead(404, { 'content-type': 'application/json; charset=utf-8' })
        .end(JSON.stringify({ ok: false, error: 'unknown_method' }));
      return;
    }
    if (params.__invalid_json) return reply({ ok: false, error: 'invalid_json' });
    if (!token) return reply({ ok: false, error: 'not_authed' });
    if (token !== this.token) return reply({ ok: false, error: 'invalid_auth' });

    const behaviour = method === 'chat.postMessage' ? this.behaviour : this.infoBehaviour;
    switch (behaviour.kind) {
      case 'hang':
        record.status = 'hung';
        this.hung.add(res);
        res.on('close', () => this.hung.delete(res));
        return;
      case 'http':
        record.status = behaviour.status;
        res.writeHead(behaviour.status, { 'content-type': 'text/html' }).end('<html>upstream error</html>');
        return;
      case 'fail':
        return reply({ ok: false, error: behaviour.error });
      case 'succeed':
        break;
    }

    const channelId = typeof params.channel === 'string' ? params.channel : '';
    const channel = this.channels.get(channelId);
    if (method === 'conversations.info') {
      if (!channel) return reply({ ok: false, error: 'channel_not_found' });
      return reply({
        ok: true,
        channel: {
          id: channelId,
          name: channelId.toLowerCase(),
          is_channel: true,
          is_member: channel.isMember,
          is_archived: channel.isArchived ?? false,
        },
      });
    }
    // chat.postMessage
    if (!channel) return reply({ ok: false, error: 'channel_not_found' });
    if (channel.isArchived) return reply({ ok: false, error: 'is_archived' });
    if (!channel.isMember) return reply({ ok: false, error: 'not_in_channel' });
    const text = typeof params.text === 'string' ? params.text : '';
    if (text.length === 0) return reply({ ok: false, error: 'no_text' });
    const ts = `${Math.floor(Date.now() / 1000)}.${String(++this.counter).padStart(6, '0')}`;
    this.messages.push({ channel: channelId, text, token, ts });
    for (const w of this.waiters.filter((w) => this.messages.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
    return reply({ ok: true, channel: channelId, ts, message: { text, ts } });
  }
}
