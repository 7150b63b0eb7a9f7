import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSmtp } from '../../../test/helpers/fake-smtp.ts';
import { loadConfig } from '../../config.ts';
import { createClients } from '../../platform/clients.ts';
import { MailerError, newMessageId, smtpTimeoutsFor } from '../../platform/mail/mailer.ts';

describe('the SMTP exchange under the send lease', () => {
  let smtp: FakeSmtp;
  let dataDir: string;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    smtp = await new FakeSmtp().start();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'remit-lease-'));
  });
  afterAll(async () => {
    release();
    await smtp?.stop();
    await fs.rm(dataDir, { recursive: true, force: true });
  });

  it('keeps the 2-minute bound under the default lease, and ends 5 s before a shorter one', () => {
    expect(smtpTimeoutsFor(300).totalMs).toBe(120_000);
    expect(smtpTimeoutsFor(125).totalMs).toBe(120_000);
    expect(smtpTimeoutsFor(30).totalMs).toBe(25_000);
    expect(smtpTimeoutsFor(10).totalMs).toBe(5_000);
  });

  it('a send the server holds past the bound ends before the lease does (outcome unknown)', async () => {
    smtp.onMessage = () => new Promise<void>((resolve) => (release = resolve));
    const config = loadConfig({ DATA_DIR: dataDir, SMTP_URL: smtp.url(), EMAIL_SEND_LEASE_S: '10' });
    const mailer = createClients(config).mail.forSmtpUrl(null);
    const sent = mailer.send({
      messageId: newMessageId('ar@acme.test'),
      from: { address: 'ar@acme.test' },
      to: ['a@client.test'],
      cc: [],
      bcc: [],
      subject: 'Held',
      text: 'Hi',
      html: '',
      attachments: [],
    });
    const error = await sent.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(MailerError);
    expect((error as MailerError).message).toMatch(/no result within 5000 ms.*outcome unknown, not resent/);
  });
});
