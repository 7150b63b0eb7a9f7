import type { ChatConfig } from '../../config.ts';
import { AppError, validationFailed } from '../http/errors.ts';
import type { Metrics } from '../observability/metrics.ts';
import { observeOutbound } from '../observability/outbound-calls.ts';

export type ChannelCheck =
  | { ok: true }
  | {
      ok: false;
      reason: string;
      /**
       * Set when Slack itself could not answer (unreachable, timed out, an HTTP error, our token refused):
       * the channel is unknown, not wrong, and the caller's input is not at fault.
       */
      upstream?: 'error' | 'timeout';
    };

/** Action ids of the buttons on Remit's approval messages, and of its reject modal (docs/slack.md). */
export const SLACK_ACTIONS = {
  approve: 'remit_approve',
  reject: 'remit_reject',
  open: 'remit_open',
  rejectModal: 'remit_reject_modal',
} as const;

/** A message as posted: `text` is the fallback (notifications, screen readers) and the whole message without blocks. */
export interface ChatMessage {
  /** Plain text; escaped for Slack by the adapter (see `escapeSlackText`). */
  text: string;
  /** Slack Block Kit blocks, built by the caller; user text inside them must be `plain_text`. */
  blocks?: readonly object[];
  /**
   * Slack message metadata: what lets a retry find a message an earlier attempt posted before it
   * crashed (`findMessage`). Not shown to people.
   */
  metadata?: { event_type: string; event_payload: Record<string, string> };
}

/** Who a Slack user is, as `users.info` tells (the email only with the `users:read.email` scope). */
export interface ChatUser {
  id: string;
  name: string;
  email: string | null;
  /** Slack's `is_email_confirmed`: the person proved the address to Slack. */
  emailConfirmed: boolean;
  deleted: boolean;
}

/**
 * Team chat (CONTRACT §6). The embedded default posts nothing (notifications are only recorded and
 * listed); the Slack adapter talks to the Slack Web API. A failure is an error to record, never one
 * that fails the caller's work.
 */
export interface ChatClient {
  readonly kind: 'none' | 'slack';
  /** Whether approval messages can carry buttons: Slack with a signing secret for the answers. */
  readonly interactive: boolean;
  /** Whether the bot can post to the channel (interface 2.5: it must already be a member). */
  checkChannel(channelId: string): Promise<ChannelCheck>;
  /** Posts a message; resolves to its id (Slack `ts`), rejects with a `ChatDeliveryError`. */
  postMessage(channelId: string, message: ChatMessage | string): Promise<string>;
  /** Replaces a posted message (Slack `chat.update`). */
  updateMessage(channelId: string, ts: string, message: ChatMessage): Promise<void>;
  /** A message only `userId` sees, in the channel (Slack `chat.postEphemeral`). */
  postEphemeral(channelId: string, userId: string, text: string): Promise<void>;
  /** Opens a modal for the person who clicked (Slack `views.open`, within 3 s of the click). */
  openView(triggerId: string, view: object): Promise<void>;
  /** The Slack user, or null when Slack knows none by that id. */
  lookupUser(userId: string): Promise<ChatUser | null>;
  /**
   * The `ts` of a message in the channel posted since `oldest` whose metadata has `event_type` and
   * `event_payload[key] === value`; null when there is none (or the history cannot be read).
   */
  findMessage(
    channelId: string,
    oldest: Date,
    match: { eventType: string; key: string; value: string },
  ): Promise<string | null>;
}

export interface ChatDeliveryErrorOptions {
  timedOut?: boolean;
  /** Worth another try later: Slack was down, slow, or rate-limited us. */
  transient?: boolean;
  /** Slack's `Retry-After` (seconds) on an HTTP 429. */
  retryAfterSeconds?: number | undefined;
  /** Slack's error code (`channel_not_found`, `ratelimited` …) when it answered `ok: false`. */
  code?: string | undefined;
}

export class ChatDeliveryError extends Error {
  readonly timedOut: boolean;
  readonly transient: boolean;
  readonly retryAfterSeconds: number | undefined;
  readonly code: string | undefined;
  constructor(message: string, options: ChatDeliveryErrorOptions = {}) {
    super(message);
    this.name = 'ChatDeliveryError';
    this.timedOut = options.timedOut ?? false;
    this.transient = options.transient ?? this.timedOut;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.code = options.code;
  }
}

/**
 * Slack error codes that say "not now" rather than "never": the post is tried again later. Anything
 * else (`channel_not_found`, `not_in_channel`, `is_archived`, `invalid_auth`, `msg_too_long` …) will
 * not change by waiting, so the notification fails at once.
 */
const TRANSIENT_SLACK_ERRORS = new Set([
  'ratelimited',
  'rate_limited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
]);

/**
 * How long to wait before trying a chat call again: Slack's `Retry-After` when it gave one (at least
 * 1 s, at most an hour), else exponential backoff from 10 s, doubled per attempt up to 15 minutes, less
 * up to a fifth at random so posts refused together do not all come back together.
 */
export function chatRetryDelaySeconds(
  attempt: number,
  error: unknown,
  random: () => number = Math.random,
): number {
  if (error instanceof ChatDeliveryError && error.retryAfterSeconds !== undefined)
    return Math.min(Math.max(error.retryAfterSeconds, 1), 3600);
  const base = Math.min(10 * 2 ** Math.max(attempt - 1, 0), 900);
  return Math.max(1, Math.round(base * (1 - random() * 0.2)));
}

class NoChat implements ChatClient {
  readonly kind = 'none' as const;
  readonly interactive = false;
  checkChannel(): Promise<ChannelCheck> {
    return Promise.resolve({ ok: true });
  }
  private refuse(): Promise<never> {
    return Promise.reject(new ChatDeliveryError('No chat service is configured'));
  }
  postMessage(): Promise<string> {
    return this.refuse();
  }
  updateMessage(): Promise<void> {
    return this.refuse();
  }
  postEphemeral(): Promise<void> {
    return this.refuse();
  }
  openView(): Promise<void> {
    return this.refuse();
  }
  lookupUser(): Promise<ChatUser | null> {
    return Promise.resolve(null);
  }
  findMessage(): Promise<string | null> {
    return Promise.resolve(null);
  }
}

interface SlackAnswer {
  ok: boolean;
  error?: string;
  ts?: string;
  channel?: { id?: string; is_member?: boolean; is_archived?: boolean };
  user?: {
    id?: string;
    name?: string;
    real_name?: string;
    deleted?: boolean;
    is_email_confirmed?: boolean;
    profile?: { email?: string; real_name?: string; display_name?: string };
  };
  messages?: { ts?: string; metadata?: { event_type?: string; event_payload?: Record<string, unknown> } }[];
}

/**
 * Plain text as Slack shows it: `&`, `<` and `>` escaped (https://api.slack.com/reference/surfaces/formatting#escaping).
 * Messages are built from what users typed (party names, invoice numbers, task titles); unescaped, a
 * party named `<!channel>` pinged a whole channel and `<https://evil|click>` became a disguised link.
 * A message's `text` is escaped, once, here; text inside blocks is `plain_text`, which Slack never parses.
 */
export function escapeSlackText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Slack's `Retry-After`: whole seconds; anything else is ignored (our own backoff applies). */
function retryAfterOf(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (value === null || !/^\d{1,6}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

/** Slack Web API with a bot token. */
class SlackChat implements ChatClient {
  readonly kind = 'slack' as const;
  readonly interactive: boolean;
  constructor(
    private readonly config: Extract<ChatConfig, { kind: 'slack' }>,
    private readonly metrics?: Metrics,
  ) {
    this.interactive = config.signingSecret !== undefined;
  }

  /**
   * Slack's write methods (`chat.postMessage`) take a JSON body; its read methods (`conversations.info`)
   * take only form or query parameters and silently ignore a JSON body (then answer `channel_not_found`).
   */
  private call(
    method: string,
    params: Record<string, unknown>,
    encoding: 'json' | 'form',
  ): Promise<SlackAnswer> {
    // A Web API refusal (`ok: false`) is an answer, but not a successful call.
    return observeOutbound(
      this.metrics,
      'slack',
      method,
      () => this.request(method, params, encoding),
      (answer) => (answer.ok ? 'ok' : 'error'),
    );
  }

  private async request(
    method: string,
    params: Record<string, unknown>,
    encoding: 'json' | 'form',
  ): Promise<SlackAnswer> {
    const response = await fetch(`${this.config.apiUrl}/${method}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.config.botToken}`,
        'content-type':
          encoding === 'json' ? 'application/json; charset=utf-8' : 'application/x-www-form-urlencoded',
      },
      body:
        encoding === 'json'
          ? JSON.stringify(params)
          : new URLSearchParams(params as Record<string, string>).toString(),
      signal: AbortSignal.timeout(this.config.timeoutMs),
    }).catch((error: unknown) => {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      throw new ChatDeliveryError(`Slack ${method} ${timedOut ? 'timed out' : 'unreachable'}`, {
        timedOut,
        transient: true,
      });
    });
    if (!response.ok) {
      // 429: Slack's rate limit, with the seconds to wait; 5xx: Slack is having trouble. Both pass.
      const retryAfterSeconds = response.status === 429 ? retryAfterOf(response) : undefined;
      await response.body?.cancel().catch(() => undefined);
      throw new ChatDeliveryError(
        `Slack ${method} answered HTTP ${response.status}` +
          (retryAfterSeconds !== undefined ? ` (retry after ${retryAfterSeconds} s)` : ''),
        { transient: response.status === 429 || response.status >= 500, retryAfterSeconds },
      );
    }
    const answer = (await response.json().catch(() => null)) as SlackAnswer | null;
    if (!answer || typeof answer.ok !== 'boolean')
      throw new ChatDeliveryError(`Slack ${method} answered something that is not a Web API reply`, {
        transient: true,
      });
    return answer;
  }

  /** A call whose `ok: false` is a failure to report (every method but the checks). */
  private async must(method: string, params: Record<string, unknown>, encoding: 'json' | 'form') {
    const answer = await this.call(method, params, encoding);
    if (!answer.ok) {
      const code = answer.error ?? 'unknown_error';
      throw new ChatDeliveryError(`Slack ${method} failed: ${code}`, {
        code,
        transient: TRANSIENT_SLACK_ERRORS.has(code),
      });
    }
    return answer;
  }

  async checkChannel(channelId: string): Promise<ChannelCheck> {
    let answer: SlackAnswer;
    try {
      answer = await this.call('conversations.info', { channel: channelId }, 'form');
    } catch (error) {
      return {
        ok: false,
        reason: `the channel could not be checked: ${(error as Error).message}`,
        upstream: error instanceof ChatDeliveryError && error.timedOut ? 'timeout' : 'error',
      };
    }
    if (!answer.ok) {
      if (answer.error === 'channel_not_found')
        return { ok: false, reason: `channel ${channelId} does not exist or the bot cannot see it` };
      if (answer.error === 'channel_is_limited_access')
        return { ok: false, reason: `the bot has no access to channel ${channelId}` };
      // Anything else is about our token or Slack itself (invalid_auth, missing_scope, ratelimited …).
      return {
        ok: false,
        reason: `Slack refused conversations.info: ${answer.error ?? 'unknown error'}`,
        upstream: 'error',
      };
    }
    if (answer.channel?.is_archived) return { ok: false, reason: `channel ${channelId} is archived` };
    // Public channels are visible to a bot that has not joined; only membership lets it post.
    if (answer.channel?.is_member !== true)
      return { ok: false, reason: `the bot is not a member of channel ${channelId}; invite it first` };
    return { ok: true };
  }

  private body(message: ChatMessage | string): Record<string, unknown> {
    const m = typeof message === 'string' ? { text: message } : message;
    return {
      text: escapeSlackText(m.text),
      ...(m.blocks ? { blocks: m.blocks } : {}),
      ...(m.metadata ? { metadata: m.metadata } : {}),
    };
  }

  async postMessage(channelId: string, message: ChatMessage | string): Promise<string> {
    const answer = await this.must('chat.postMessage', { channel: channelId, ...this.body(message) }, 'json');
    return answer.ts ?? '';
  }

  async updateMessage(channelId: string, ts: string, message: ChatMessage): Promise<void> {
    await this.must('chat.update', { channel: channelId, ts, ...this.body(message) }, 'json');
  }

  async postEphemeral(channelId: string, userId: string, text: string): Promise<void> {
    await this.must(
      'chat.postEphemeral',
      { channel: channelId, user: userId, text: escapeSlackText(text) },
      'json',
    );
  }

  async openView(triggerId: string, view: object): Promise<void> {
    await this.must('views.open', { trigger_id: triggerId, view }, 'json');
  }

  async lookupUser(userId: string): Promise<ChatUser | null> {
    const answer = await this.call('users.info', { user: userId }, 'form');
    if (!answer.ok) {
      if (answer.error === 'user_not_found') return null;
      throw new ChatDeliveryError(`Slack users.info failed: ${answer.error ?? 'unknown_error'}`, {
        code: answer.error,
        transient: TRANSIENT_SLACK_ERRORS.has(answer.error ?? ''),
      });
    }
    const user = answer.user ?? {};
    return {
      id: user.id ?? userId,
      name: user.profile?.real_name || user.real_name || user.name || userId,
      email: user.profile?.email?.trim().toLowerCase() || null,
      emailConfirmed: user.is_email_confirmed === true,
      deleted: user.deleted === true,
    };
  }

  async findMessage(
    channelId: string,
    oldest: Date,
    match: { eventType: string; key: string; value: string },
  ): Promise<string | null> {
    // Needs the `channels:history` scope; without it the caller posts again (at least once, not twice
    // when it can help it).
    const answer = await this.call(
      'conversations.history',
      {
        channel: channelId,
        oldest: (oldest.getTime() / 1000).toFixed(6),
        include_all_metadata: 'true',
        limit: '200',
      },
      'form',
    );
    if (!answer.ok) return null;
    const found = (answer.messages ?? []).find(
      (m) =>
        m.metadata?.event_type === match.eventType && m.metadata.event_payload?.[match.key] === match.value,
    );
    return found?.ts ?? null;
  }
}

/**
 * The bot must already be in a channel before it is configured (interface 2.5): an agent's channel and
 * the organization's default one are checked alike. Only a configured chat service can tell; without
 * one the channel is stored unchecked. A refusal about the channel is the caller's 422 (naming `field`);
 * Slack down or our own token refused says nothing about the channel, so 502 (504 on a timeout).
 * Call it before any transaction opens: it may wait for Slack.
 */
export async function requireUsableChannel(
  chat: ChatClient,
  channelId: string,
  field: string,
): Promise<void> {
  const check = await chat.checkChannel(channelId);
  if (check.ok) return;
  if (check.upstream)
    throw new AppError(
      check.upstream === 'timeout' ? 'gateway_timeout' : 'bad_gateway',
      `The chat channel could not be checked, try again: ${check.reason}`,
    );
  throw validationFailed(field, `Cannot post there: ${check.reason}`);
}

export function createChatClient(config: ChatConfig, metrics?: Metrics): ChatClient {
  return config.kind === 'slack' ? new SlackChat(config, metrics) : new NoChat();
}
