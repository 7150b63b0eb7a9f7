import type { Config } from '../../config.ts';
import type { MailTransports } from '../../platform/mail/mailer.ts';
import { newMessageId } from '../../platform/mail/mailer.ts';
import { AppError } from '../../platform/http/errors.ts';

export interface SystemMail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Sends Remit's own mail (invitations, password resets, sign-in links) from `MAIL_FROM` through the
 * operator's SMTP_URL, or into DATA_DIR/outbox on the embedded defaults. Called after the token's
 * transaction has committed (no network call inside a transaction), and never queued: a job would have
 * to keep the link's plaintext token in the database, which stores only its hash. A failed send is the
 * caller's 502; the admin resends, or the person asks again.
 */
export async function sendSystemMail(
  deps: { config: Pick<Config, 'mailFrom'>; mail: MailTransports },
  mail: SystemMail,
): Promise<void> {
  const from = deps.config.mailFrom;
  try {
    await deps.mail.forSmtpUrl(null).send({
      messageId: newMessageId(from.address),
      from,
      to: [mail.to],
      cc: [],
      bcc: [],
      subject: mail.subject,
      text: mail.text,
      html: '',
      attachments: [],
      date: new Date(),
    });
  } catch (error) {
    const failure = new AppError('bad_gateway', `The email to ${mail.to} could not be sent; try again`);
    failure.cause = error;
    throw failure;
  }
}
