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

/**
 * Team chat (CONTRACT §6). The embedded default posts nothing (notifications are only recorded and
 * listed); the Slack adapter talks to the Slack Web API. A failure is an error to record, never one
 * that fails the caller's work.
 */
export interface ChatClient {
  readonly kind: 'none' | 'slack';
  /** Whether the bot can post to the channel (interface 2.5: it must already be a member). */
  checkChannel(channelId: string): Promise<ChannelCheck>;
  /** Posts a plain-text message (escaped for Slack); resolves to its id (Slack `ts`), rejects with the reason. */
  postMessage(channelId: string, text: string): Promise<string>;
}

export class ChatDeliveryError extends Error {
  constructor(
    message: string,
    readonly timedOut = false,
  ) {
    super(message);
    this.name = 'ChatDeliveryError';
  }
}

class NoChat implements ChatClient {
  readonly kind = 'none' as const;
  checkChannel(): Promise<ChannelCheck> {
    return Promise.resolve({ ok: true });
  }
  postMessage(): Promise<string> {
    return Promise.reject(new ChatDeliveryError('No chat service is configured'));
  }
}

interface SlackAnswer {
  ok: boolean;
  error?: string;
  ts?: string;
  channel?: { id?: string; is_member?: boolean; is_archived?: boolean };
}

/**
 * Plain text as Slack shows it: `&`, `<` and `>` escaped (https://api.slack.com/reference/surfaces/formatting#escaping).
 * Messages are built from what users typed (party names, invoice numbers, task titles); unescaped, a
 * party named `<!channel>` pinged a whole channel and `<https://evil|click>` became a disguised link.
 * Every message we post is plain text, so the whole text is escaped, once, here.
 */
export function escapeSlackText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Slack Web API (`conversations.info`, `chat.postMessage`) with a bot token. */
class SlackChat implements ChatClient {
  readonly kind = 'slack' as const;
  constructor(
    private readonly config: Extract<ChatConfig, { kind: 'slack' }>,
    private readonly metrics?: Metrics,
  ) {}

  /**
   * Slack's write methods (`chat.postMessage`) take a JSON body; its read methods (`conversations.info`)
   * take only form or query parameters and silently ignore a JSON body (then answer `channel_not_found`).
   */
  private call(
    method: string,
    params: Record<string, string>,
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
    params: Record<string, string>,
    encoding: 'json' | 'form',
  ): Promise<SlackAnswer> {
    const response = await fetch(`${this.config.apiUrl}/${method}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.config.botToken}`,
        'content-type':
          encoding === 'json' ? 'application/json; charset=utf-8' : 'application/x-www-form-urlencoded',
      },
      body: encoding === 'json' ? JSON.stringify(params) : new URLSearchParams(params).toString(),
      signal: AbortSignal.timeout(this.config.timeoutMs),
    }).catch((error: unknown) => {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      throw new ChatDeliveryError(`Slack ${method} ${timedOut ? 'timed out' : 'unreachable'}`, timedOut);
    });
    if (!response.ok) throw new ChatDeliveryError(`Slack ${method} answered HTTP ${response.status}`);
    const answer = (await response.json().catch(() => null)) as SlackAnswer | null;
    if (!answer || typeof answer.ok !== 'boolean')
      throw new ChatDeliveryError(`Slack ${method} answered something that is not a Web API reply`);
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

  async postMessage(channelId: string, text: string): Promise<string> {
    const answer = await this.call(
      'chat.postMessage',
      { channel: channelId, text: escapeSlackText(text) },
      'json',
    );
    if (!answer.ok)
      throw new ChatDeliveryError(`Slack chat.postMessage failed: ${answer.error ?? 'unknown error'}`);
    return answer.ts ?? '';
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
