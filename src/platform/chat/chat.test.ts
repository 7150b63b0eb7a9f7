import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../../test/helpers/fake-slack.ts';
import { ChatDeliveryError, createChatClient, type ChatClient } from './chat.ts';

/** The Slack adapter against a local fake of the Web API (test/helpers/fake-slack.ts). */

let slack: FakeSlack;
let chat: ChatClient;

beforeAll(async () => {
  slack = await new FakeSlack().start();
  slack.channel('C1', true);
  slack.channel('C2', false);
  slack.channel('C3', true, true);
  chat = createChatClient({ kind: 'slack', botToken: slack.token, apiUrl: slack.url, timeoutMs: 300 });
});
afterAll(async () => slack?.close());
beforeEach(() => {
  slack.reset();
});

describe('checkChannel (conversations.info)', () => {
  it('asks form-encoded with the bot token (Slack read methods ignore JSON bodies)', async () => {
    expect(await chat.checkChannel('C1')).toEqual({ ok: true });
    const request = slack.requestsFor('conversations.info').at(-1)!;
    expect(request).toMatchObject({
      contentType: 'application/x-www-form-urlencoded',
      token: slack.token,
      params: { channel: 'C1' },
    });
  });

  it('not a member, unknown, archived: refusals about the channel (no upstream flag)', async () => {
    const notMember = await chat.checkChannel('C2');
    expect(notMember).toEqual({ ok: false, reason: expect.stringMatching(/not a member of channel C2/) });
    expect(await chat.checkChannel('C404')).toEqual({
      ok: false,
      reason: expect.stringMatching(/does not exist/),
    });
    expect(await chat.checkChannel('C3')).toEqual({ ok: false, reason: expect.stringMatching(/archived/) });
  });

  it('Slack failing is marked upstream: HTTP error, a refused token, a timeout', async () => {
    slack.infoBehaviour = { kind: 'http', status: 503 };
    expect(await chat.checkChannel('C1')).toMatchObject({ ok: false, upstream: 'error' });
    slack.infoBehaviour = { kind: 'fail', error: 'invalid_auth' };
    expect(await chat.checkChannel('C1')).toMatchObject({
      ok: false,
      upstream: 'error',
      reason: expect.stringContaining('invalid_auth'),
    });
    slack.infoBehaviour = { kind: 'hang' };
    expect(await chat.checkChannel('C1')).toMatchObject({ ok: false, upstream: 'timeout' });
  });

  it('another token is refused by the fake as by Slack', async () => {
    const wrong = createChatClient({
      kind: 'slack',
      botToken: 'xoxb-wrong',
      apiUrl: slack.url,
      timeoutMs: 300,
    });
    expect(await wrong.checkChannel('C1')).toMatchObject({
      ok: false,
      upstream: 'error',
      reason: expect.stringContaining('invalid_auth'),
    });
  });
});

describe('postMessage (chat.postMessage)', () => {
  it('posts JSON with the bot token and resolves to the message ts', async () => {
    const ts = await chat.postMessage('C1', 'Hello *team*');
    expect(ts).toMatch(/^\d+\.\d{6}$/);
    expect(slack.messages.at(-1)).toEqual({
      channel: 'C1',
      text: 'Hello *team*',
      token: slack.token,
      ts,
      updates: 0,
    });
    expect(slack.requestsFor('chat.postMessage').at(-1)!.contentType).toBe('application/json');
  });

  it('rejects with ChatDeliveryError for Slack refusals, HTTP errors and timeouts; nothing is recorded', async () => {
    const before = slack.messages.length;
    await expect(chat.postMessage('C2', 'x')).rejects.toThrow(/not_in_channel/);
    await expect(chat.postMessage('C404', 'x')).rejects.toThrow(/channel_not_found/);
    slack.behaviour = { kind: 'fail', error: 'ratelimited' };
    await expect(chat.postMessage('C1', 'x')).rejects.toThrow(/ratelimited/);
    slack.behaviour = { kind: 'http', status: 500 };
    await expect(chat.postMessage('C1', 'x')).rejects.toThrow(/HTTP 500/);
    slack.behaviour = { kind: 'hang' };
    const hung = chat.postMessage('C1', 'x');
    await expect(hung).rejects.toBeInstanceOf(ChatDeliveryError);
    await expect(hung).rejects.toThrow(/timed out/);
    expect(slack.messages.length).toBe(before);
  });

  it('waitForMessages resolves once enough messages have arrived', async () => {
    const target = slack.messages.length + 2;
    const waiting = slack.waitForMessages(target, 2000);
    await chat.postMessage('C1', 'one');
    await chat.postMessage('C1', 'two');
    await expect(waiting).resolves.toBeUndefined();
    expect(
      slack
        .messagesIn('C1')
        .slice(-2)
        .map((m) => m.text),
    ).toEqual(['one', 'two']);
  });
});

describe('without a bot token', () => {
  it('accepts any channel and refuses to post', async () => {
    const none = createChatClient({ kind: 'none' });
    expect(await none.checkChannel('anything')).toEqual({ ok: true });
    await expect(none.postMessage('C1', 'x')).rejects.toBeInstanceOf(ChatDeliveryError);
  });
});
