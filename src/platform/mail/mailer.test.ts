import fs from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  composeMessage,
  MailerError,
  mailerFor,
  newMessageId,
  OutboxMailer,
  outboxFileName,
  parseSmtpUrl,
  SmtpMailer,
  type OutgoingMail,
} from './mailer.ts';

const mail = (overrides: Partial<OutgoingMail> = {}): OutgoingMail => ({
  messageId: newMessageId('ar@acme.test'),
  from: { address: 'ar@acme.test', name: 'Acme' },
  to: ['a@client.test'],
  cc: [],
  bcc: ['hidden@acme.test'],
  subject: 'Hello',
  text: 'Hi',
  html: '',
  attachments: [],
  ...overrides,
});

describe('parseSmtpUrl', () => {
  it('reads scheme, credentials (decoded), host and the default ports', () => {
    expect(parseSmtpUrl('smtps://u%40x.test:p%3Aw@mail.x.test')).toEqual({
      secure: true,
      host: 'mail.x.test',
      port: 465,
      user: 'u@x.test',
      password: 'p:w',
    });
    expect(parseSmtpUrl('smtp://mail.x.test:2525')).toMatchObject({
      secure: false,
      port: 2525,
      user: undefined,
    });
    expect(parseSmtpUrl('smtp://[::1]')).toMatchObject({ host: '::1', port: 587 });
  });

  it('refuses other schemes, paths and queries', () => {
    for (const url of ['http://x.test', 'smtp://x.test/p', 'smtp://x.test?secure=false', 'x', 'smtp://']) {
      expect(() => parseSmtpUrl(url), url).toThrow();
    }
  });
});

describe('messages', () => {
  it('a Message-ID of the sender domain, and a file name that is the Message-ID', () => {
    const id = newMessageId('AR@Acme.Test');
    expect(id).toMatch(/^<[0-9a-f-]{36}@acme\.test>$/);
    expect(outboxFileName('<abc@acme.test>')).toBe('abc@acme.test.eml');
    expect(outboxFileName('<../x/y@z>')).toBe('.._x_y@z.eml');
  });

  it('Bcc is written only when asked (the outbox keeps it, SMTP never does)', async () => {
    const message = mail();
    expect((await composeMessage(message, { keepBcc: true })).toString()).toMatch(/^Bcc: hidden@acme\.test/m);
    expect((await composeMessage(message, { keepBcc: false })).toString()).not.toMatch(/^Bcc:/m);
  });

  it('chooses the account server, else SMTP_URL, else the outbox', () => {
    const settings = { smtpUrl: undefined, outboxDir: '/tmp/o', allowPrivateNetworkTargets: false };
    expect(mailerFor('smtp://a.test', settings).kind).toBe('smtp');
    expect(mailerFor(null, { ...settings, smtpUrl: 'smtp://op.test' }).kind).toBe('smtp');
    expect(mailerFor(null, settings)).toBeInstanceOf(OutboxMailer);
  });
});

describe('OutboxMailer', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remit-outbox-'));
  });
  afterAll(async () => fs.rm(dir, { recursive: true, force: true }));

  it('writes one complete file per Message-ID and never a second one', async () => {
    const message = mail();
    const outbox = new OutboxMailer(path.join(dir, 'outbox'));
    expect(await outbox.wasSent(message.messageId)).toBe(false);
    const result = await outbox.send(message);
    expect(result).toEqual({
      messageId: message.messageId,
      accepted: ['a@client.test', 'hidden@acme.test'],
      rejected: [],
    });
    expect(await outbox.wasSent(message.messageId)).toBe(true);
    const file = outbox.pathOf(message.messageId);
    const first = await fs.readFile(file);
    await outbox.send({ ...message, subject: 'Changed' });
    expect(await fs.readFile(file)).toEqual(first);
    expect(await fs.readdir(path.join(dir, 'outbox'))).toEqual([path.basename(file)]);
  });

  it('a write that fails is "not sent" and leaves nothing behind', async () => {
    const blocker = path.join(dir, 'a-file');
    await fs.writeFile(blocker, '');
    const error = await new OutboxMailer(blocker).send(mail()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MailerError);
    expect((error as MailerError).outcome).toBe('not_sent');
  });
});

describe('SmtpMailer: a lost connection before the message was complete is "not sent"', () => {
  let server: SMTPServer;
  let port: number;
  beforeAll(async () => {
    // Drops the connection at RCPT TO: the server never got the message.
    server = new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      authOptional: true,
      logger: false,
      onRcptTo: (_address, session) => {
        for (const connection of server.connections) {
          if (connection.session?.id === session.id) connection._socket.destroy();
        }
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    port = (server.server.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  it('dropped at RCPT TO → not_sent (safe to send again)', async () => {
    const mailer = new SmtpMailer({ url: `smtp://127.0.0.1:${port}`, refusePrivateAddresses: false });
    const error = await mailer.send(mail()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MailerError);
    expect((error as MailerError).outcome).toBe('not_sent');
    expect(await mailer.wasSent()).toBeUndefined();
  });

  it('refused before connecting when the host is private and must not be', async () => {
    const mailer = new SmtpMailer({ url: `smtp://127.0.0.1:${port}`, refusePrivateAddresses: true });
    const error = await mailer.send(mail()).catch((e: unknown) => e);
    expect((error as MailerError).message).toMatch(/private/);
    expect((error as MailerError).outcome).toBe('not_sent');
  });
});

describe('SMTP_REQUIRE_TLS', () => {
  let server: SMTPServer;
  let port: number;
  const received: string[] = [];
  beforeAll(async () => {
    // A server that does not offer STARTTLS: without the setting, mail goes to it in clear text.
    server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData: (stream, _session, callback) => {
        stream.on('data', (chunk: Buffer) => received.push(chunk.toString()));
        stream.on('end', () => callback());
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    port = (server.server.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  const settings = (requireTls: boolean) => ({
    smtpUrl: `smtp://127.0.0.1:${port}`,
    outboxDir: os.tmpdir(),
    allowPrivateNetworkTargets: true,
    requireTls,
  });

  it('off: a server without STARTTLS still gets the message', async () => {
    await mailerFor(null, settings(false)).send(mail({ subject: 'clear' }));
    expect(received.join('')).toContain('Subject: clear');
  });

  it('on: nothing is sent to a server that cannot upgrade; the error says why (operator and account servers)', async () => {
    received.length = 0;
    for (const account of [null, `smtp://127.0.0.1:${port}`]) {
      const error = await mailerFor(account, settings(true))
        .send(mail())
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MailerError);
      expect((error as MailerError).outcome).toBe('not_sent');
      expect((error as MailerError).message).toMatch(/STARTTLS|TLS/);
    }
    expect(received).toEqual([]);
  });
});
