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
  | { kind: 'hang' }
  /**
   * Slack's rate limit: HTTP 429 with `Retry-After: <seconds>`, `times` times (then succeeds; default
   * always). https://api.slack.com/apis/rate-limits
   */
  | { kind: 'ratelimit'; retryAfter: number; times?: number };

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
  blocks?: unknown;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
  /** Set by `chat.update`: how many times the message was replaced. */
  updates: number;
}

/** A workspace member, for `users.info` (and whom `interact` clicks as). */
export interface FakeSlackUser {
  id: string;
  name: string;
  email?: string;
  emailConfirmed?: boolean;
  deleted?: boolean;
}

/** Methods whose arguments Slack accepts as a JSON body. */
const JSON_METHODS = new Set(['chat.postMessage', 'chat.update', 'chat.postEphemeral', 'views.open']);
const KNOWN_METHODS = new Set([
  'conversations.info',
  'conversations.history',
  'chat.postMessage',
  'chat.update',
  'chat.postEphemeral',
  'views.open',
  'users.info',
]);

/** A button of an `actions` block, by action id. */
export function findButton(
  blocks: unknown,
  actionId: string,
): { action_id: string; value?: string; url?: string; text?: { text: string } } | undefined {
  if (!Array.isArray(blocks)) return undefined;
  for (const block of blocks as { type?: string; elements?: { action_id?: string }[] }[]) {
    if (block.type !== 'actions') continue;
    const found = block.elements?.find((e) => e.action_id === actionId);
    if (found) return found as { action_id: string; value?: string };
  }
  return undefined;
}

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
  /** What `chat.update` does. */
  updateBehaviour: SlackBehaviour = { kind: 'succeed' };
  /** Members of the workspace, by id. */
  readonly users = new Map<string, FakeSlackUser>();
  /** `chat.postEphemeral` messages: what one person alone was told. */
  readonly ephemerals: { channel: string; user: string; text: string }[] = [];
  /** `views.open` calls: the modals opened. */
  readonly views: { trigger_id: string; view: Record<string, unknown> }[] = [];
  /** The app's signing secret: configure it as `SLACK_SIGNING_SECRET`; `interact` signs with it. */
  readonly signingSecret = crypto.randomBytes(16).toString('hex');
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
  env(options: { interactive?: boolean } = {}): Record<string, string> {
    return {
      SLACK_BOT_TOKEN: this.token,
      SLACK_API_URL: this.url,
      ...(options.interactive ? { SLACK_SIGNING_SECRET: this.signingSecret } : {}),
    };
  }

  /** Adds a workspace member; returns its id. */
  user(id: string, name: string, email?: string, emailConfirmed = true): string {
    this.users.set(id, { id, name, ...(email ? { email } : {}), emailConfirmed });
    return id;
  }

  /**
   * An interaction as Slack sends it to the app's Request URL: `payload=<JSON>` form-encoded, signed
   * with the signing secret (`X-Slack-Signature: v0=HMAC-SHA256("v0:<ts>:<body>")` and
   * `X-Slack-Request-Timestamp`). `timestamp` (seconds), `secret`, `signature` and `body` override what
   * would be sent, to test refusals. Send it with `app.inject` (or fetch) as a POST.
   */
  signed(
    payload: unknown,
    options: { timestamp?: number; signature?: string; secret?: string; body?: string } = {},
  ): { body: string; headers: Record<string, string> } {
    const body = options.body ?? new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
    const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
    const signature =
      options.signature ??
      `v0=${crypto
        .createHmac('sha256', options.secret ?? this.signingSecret)
        .update(`v0:${timestamp}:${body}`)
        .digest('hex')}`;
    return {
      body,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': signature,
      },
    };
  }

  /** A click on one of a posted message's buttons by `userId` (a `block_actions` payload). */
  clickPayload(
    message: SlackMessage,
    actionId: string,
    userId: string,
    triggerId = `trigger-${crypto.randomUUID()}`,
  ) {
    const button = findButton(message.blocks, actionId);
    if (!button) throw new Error(`FakeSlack: the message has no button ${actionId}`);
    return {
      type: 'block_actions',
      user: { id: userId, team_id: 'T0FAKE' },
      team: { id: 'T0FAKE' },
      api_app_id: 'A0FAKE',
      trigger_id: triggerId,
      channel: { id: message.channel },
      container: { type: 'message', channel_id: message.channel, message_ts: message.ts },
      message: { ts: message.ts, text: message.text },
      response_url: 'https://hooks.slack.invalid/actions/T0FAKE/1/abc',
      actions: [{ action_id: actionId, block_id: 'remit_actions', value: button.value, type: 'button' }],
    };
  }

  /** The submission of a modal opened by `views.open`, with the reason typed. */
  submitPayload(view: Record<string, unknown>, userId: string, reason: string) {
    return {
      type: 'view_submission',
      user: { id: userId, team_id: 'T0FAKE' },
      team: { id: 'T0FAKE' },
      view: {
        id: 'V0FAKE',
        callback_id: view.callback_id,
        private_metadata: view.private_metadata,
        state: { values: { reason: { reason: { type: 'plain_text_input', value: reason } } } },
      },
    };
  }

  /** The message with this ts. */
  message(ts: string): SlackMessage | undefined {
    return this.messages.find((m) => m.ts === ts);
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
    this.updateBehaviour = { kind: 'succeed' };
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
    const known = KNOWN_METHODS.has(method);
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

    const behaviour =
      method === 'chat.postMessage'
        ? this.behaviour
        : method === 'conversations.info'
          ? this.infoBehaviour
          : method === 'chat.update'
            ? this.updateBehaviour
            : ({ kind: 'succeed' } as SlackBehaviour);
    switch (behaviour.kind) {
      case 'ratelimit': {
        if (behaviour.times === undefined || behaviour.times > 0) {
          if (behaviour.times !== undefined) behaviour.times -= 1;
          record.status = 429;
          res
            .writeHead(429, { 'content-type': 'text/plain', 'retry-after': String(behaviour.retryAfter) })
            .end('rate limited');
          return;
        }
        break;
      }
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
    if (method === 'users.info') {
      const user = this.users.get(String(params.user ?? ''));
      if (!user) return reply({ ok: false, error: 'user_not_found' });
      return reply({
        ok: true,
        user: {
          id: user.id,
          name: user.name.toLowerCase().replace(/\s+/g, '.'),
          real_name: user.name,
          deleted: user.deleted ?? false,
          is_email_confirmed: user.emailConfirmed ?? false,
          profile: { real_name: user.name, ...(user.email ? { email: user.email } : {}) },
        },
      });
    }
    if (method === 'views.open') {
      if (typeof params.trigger_id !== 'string' || !params.view || typeof params.view !== 'object')
        return reply({ ok: false, error: 'invalid_arguments' });
      this.views.push({ trigger_id: params.trigger_id, view: params.view as Record<string, unknown> });
      return reply({ ok: true, view: { id: `V${this.views.length}` } });
    }
    if (method === 'conversations.history') {
      if (!channel) return reply({ ok: false, error: 'channel_not_found' });
      const oldest = Number(params.oldest ?? 0);
      const withMetadata = params.include_all_metadata === 'true';
      const messages = this.messagesIn(channelId)
        .filter((m) => Number(m.ts) >= oldest)
        .reverse()
        .map((m) => ({
          type: 'message',
          ts: m.ts,
          text: m.text,
          ...(withMetadata && m.metadata ? { metadata: m.metadata } : {}),
        }));
      return reply({ ok: true, messages, has_more: false });
    }
    if (method === 'chat.postEphemeral') {
      if (!channel) return reply({ ok: false, error: 'channel_not_found' });
      const text = typeof params.text === 'string' ? params.text : '';
      this.ephemerals.push({ channel: channelId, user: String(params.user ?? ''), text });
      return reply({ ok: true, message_ts: `${Math.floor(Date.now() / 1000)}.999999` });
    }
    if (method === 'chat.update') {
      const message = this.messages.find((m) => m.channel === channelId && m.ts === params.ts);
      if (!message) return reply({ ok: false, error: 'message_not_found' });
      message.text = typeof params.text === 'string' ? params.text : message.text;
      if (params.blocks !== undefined) message.blocks = params.blocks;
      message.updates += 1;
      return reply({ ok: true, channel: channelId, ts: message.ts });
    }
    // chat.postMessage
    if (!channel) return reply({ ok: false, error: 'channel_not_found' });
    if (channel.isArchived) return reply({ ok: false, error: 'is_archived' });
    if (!channel.isMember) return reply({ ok: false, error: 'not_in_channel' });
    const text = typeof params.text === 'string' ? params.text : '';
    if (text.length === 0) return reply({ ok: false, error: 'no_text' });
    const ts = `${Math.floor(Date.now() / 1000)}.${String(++this.counter).padStart(6, '0')}`;
    this.messages.push({
      channel: channelId,
      text,
      token,
      ts,
      updates: 0,
      ...(params.blocks !== undefined ? { blocks: params.blocks } : {}),
      ...(params.metadata && typeof params.metadata === 'object'
        ? { metadata: params.metadata as SlackMessage['metadata'] }
        : {}),
    });
    for (const w of this.waiters.filter((w) => this.messages.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
    return reply({ ok: true, channel: channelId, ts, message: { text, ts } });
  }
}
