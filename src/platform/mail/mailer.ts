import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import SMTPConnection, {
  type SMTPConnectionOptions,
  type SMTPConnectionSendInfo,
} from 'nodemailer/lib/smtp-connection';
import { publicAddressesOf } from '../http/outbound.ts';
import type { Metrics } from '../observability/metrics.ts';
import { observeOutbound } from '../observability/outbound-calls.ts';

/**
 * Outbound email (CONTRACT §6) behind one small interface: the embedded default writes each message as
 * an `.eml` file under `DATA_DIR/outbox`; with an SMTP server configured (the account's `smtp_url`, or
 * the operator's `SMTP_URL`) it is sent there. Both build the same RFC 5322 message with nodemailer's
 * MailComposer.
 */
export interface Mailer {
  readonly kind: 'outbox' | 'smtp';
  /** Hands the message over. Rejects with a `MailerError` saying whether it may have gone out. */
  send(mail: OutgoingMail): Promise<SendResult>;
  /**
   * Whether a message with this Message-ID was already handed over: true or false when the mailer can
   * tell (the outbox looks for its file), undefined when it cannot (an SMTP server cannot be asked).
   */
  wasSent(messageId: string): Promise<boolean | undefined>;
}

export interface MailAddress {
  address: string;
  name?: string | undefined;
}

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface OutgoingMail {
  /** `<id@domain>`, fixed by the caller before the first attempt, so a retry sends the same message. */
  messageId: string;
  from: MailAddress;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  text: string;
  /** Empty: a text-only message. */
  html: string;
  attachments: MailAttachment[];
  date?: Date | undefined;
}

export interface SendResult {
  messageId: string;
  accepted: string[];
  rejected: string[];
}

/**
 * `not_sent`: the server (or the disk) refused, or the connection ended before the message was
 * complete; nothing was delivered. `unknown`: the connection ended after the whole message was
 * transmitted but before the server answered, so it may have been accepted.
 */
export type SendOutcome = 'not_sent' | 'unknown';

export class MailerError extends Error {
  constructor(
    message: string,
    readonly outcome: SendOutcome,
    readonly responseCode?: number,
    /** A timeout (connection, greeting, socket or the whole exchange) rather than a refusal. */
    readonly timedOut = false,
  ) {
    super(message);
    this.name = 'MailerError';
  }
}

/** A Message-ID of our own: random, with the sender's domain on the right (RFC 5322 §3.6.4). */
/**
 * The Message-ID of a draft: the same for every attempt to send it, so a receiving server that keeps
 * Message-IDs can drop a duplicate if an attempt whose outcome was unknown is sent again.
 */
export function messageIdForDraft(draftUid: string, fromAddress: string): string {
  return newMessageId(fromAddress).replace(/^<[^@]+@/, `<${draftUid}@`);
}

export function newMessageId(fromAddress: string): string {
  const domain =
    fromAddress
      .split('@')
      .pop()
      ?.toLowerCase()
      .replace(/[^a-z0-9.-]/g, '') || 'remit.local';
  return `<${crypto.randomUUID()}@${domain}>`;
}

/** The message as RFC 5322 bytes. `keepBcc` writes the Bcc header too (the outbox keeps it as a record). */
export async function composeMessage(mail: OutgoingMail, options: { keepBcc: boolean }): Promise<Buffer> {
  // Imported on the first send: nodemailer is ≈ 30 ms of start-up a server that sends nothing skips.
  const { default: MailComposer } = await import('nodemailer/lib/mail-composer');
  const node = new MailComposer({
    messageId: mail.messageId,
    date: mail.date ?? new Date(),
    from: mail.from.name ? { name: mail.from.name, address: mail.from.address } : mail.from.address,
    to: mail.to,
    cc: mail.cc,
    bcc: mail.bcc,
    subject: mail.subject,
    text: mail.text,
    ...(mail.html ? { html: mail.html } : {}),
    attachments: mail.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: a.content,
    })),
    // The content is ours in memory; never let a field read a local file or fetch a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
    xMailer: false,
  }).compile();
  node.keepBcc = options.keepBcc;
  return node.build();
}

const allRecipients = (mail: OutgoingMail) => [...mail.to, ...mail.cc, ...mail.bcc];

/** `<id@domain>` → a file name that is the Message-ID itself, made safe. */
export function outboxFileName(messageId: string): string {
  return `${messageId.replace(/^<|>$/g, '').replace(/[^A-Za-z0-9._@-]/g, '_')}.eml`;
}

/**
 * The embedded default: one `.eml` per message in `dir`, named after its Message-ID. The file is
 * written under a temporary name and renamed into place, so a file that exists is complete — which is
 * what lets a retry ask `wasSent` instead of writing a second copy.
 */
export class OutboxMailer implements Mailer {
  readonly kind = 'outbox';

  constructor(readonly dir: string) {}

  pathOf(messageId: string): string {
    return path.join(this.dir, outboxFileName(messageId));
  }

  async wasSent(messageId: string): Promise<boolean> {
    try {
      await fs.access(this.pathOf(messageId));
      return true;
    } catch {
      return false;
    }
  }

  async send(mail: OutgoingMail): Promise<SendResult> {
    const result = { messageId: mail.messageId, accepted: allRecipients(mail), rejected: [] };
    if (await this.wasSent(mail.messageId)) return result;
    const bytes = await composeMessage(mail, { keepBcc: true });
    const target = this.pathOf(mail.messageId);
    const temporary = `${target}.${crypto.randomBytes(6).toString('hex')}.tmp`;
    try {
      await fs.mkdir(this.dir, { recursive: true });
      await fs.writeFile(temporary, bytes, { flag: 'wx' });
      await fs.rename(temporary, target);
    } catch (error) {
      await fs.rm(temporary, { force: true }).catch(() => undefined);
      throw new MailerError(`outbox write failed: ${(error as Error).message}`, 'not_sent');
    }
    return result;
  }
}

export interface SmtpTarget {
  url: string;
  /**
   * SMTP_REQUIRE_TLS: an `smtp://` server must upgrade with STARTTLS, else nothing is sent (without it,
   * STARTTLS is used when offered, and a server that does not offer it gets the message in clear text).
   */
  requireTls?: boolean;
  /**
   * For an address an organization configured (an account's `smtp_url`, unless
   * ALLOW_PRIVATE_NETWORK_TARGETS): its host must not be a loopback, private, link-local or metadata
   * address, checked on the address actually connected to. The operator's `SMTP_URL` is trusted.
   */
  refusePrivateAddresses: boolean;
}

export interface SmtpTimeouts {
  connectionMs: number;
  greetingMs: number;
  socketMs: number;
  /** The whole exchange; past it the send is aborted. */
  totalMs: number;
}

export const DEFAULT_SMTP_TIMEOUTS: SmtpTimeouts = {
  connectionMs: 10_000,
  greetingMs: 10_000,
  socketMs: 30_000,
  totalMs: 120_000,
};

export interface ParsedSmtpUrl {
  secure: boolean;
  host: string;
  port: number;
  user: string | undefined;
  password: string | undefined;
}

export class SmtpUrlError extends Error {}

/**
 * `smtp://[user[:password]@]host[:port]` (STARTTLS when offered, port 587 by default) or `smtps://…`
 * (TLS from the start, port 465). Nothing else: no path and no query, so nothing in it can turn off
 * certificate checks or point the connection elsewhere.
 */
export function parseSmtpUrl(raw: string): ParsedSmtpUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SmtpUrlError('is not a valid URL');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new SmtpUrlError('must start with smtp:// or smtps://');
  }
  if (!url.hostname) throw new SmtpUrlError('has no host');
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) {
    throw new SmtpUrlError('takes only user, password, host and port (no path or query)');
  }
  const secure = url.protocol === 'smtps:';
  return {
    secure,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    user: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
  };
}

/** Every address of `host`, refused when any is private (the check is repeated at each send). */
export async function resolvePublicHost(host: string): Promise<string[]> {
  const addresses = await publicAddressesOf(host);
  if (!addresses) {
    throw new SmtpUrlError(`${host} resolves to a loopback, private, link-local or metadata address`);
  }
  return addresses;
}

/** A nodemailer error → why it failed, and whether the message may have been delivered anyway. */
function describeSmtpError(error: unknown, messageTransmitted: boolean): MailerError {
  const e = error as { message?: string; code?: string; command?: string; responseCode?: number };
  const parts = [e.message ?? String(error)];
  if (e.command) parts.push(`command ${e.command}`);
  if (e.code) parts.push(e.code);
  const detail = parts.join('; ');
  // A reply from the server is an answer: the message was refused, whatever the stage.
  if (e.responseCode !== undefined) return new MailerError(`SMTP ${detail}`, 'not_sent', e.responseCode);
  const timedOut = e.code === 'ETIMEDOUT';
  if (messageTransmitted) {
    return new MailerError(
      `SMTP connection lost after the whole message was transmitted (${detail}); outcome unknown, not resent`,
      'unknown',
      undefined,
      timedOut,
    );
  }
  return new MailerError(`SMTP ${detail}`, 'not_sent', undefined, timedOut);
}

const smtpError = (message: string, code: string) => Object.assign(new Error(message), { code });

/**
 * Sends through an SMTP server, one connection per message, with nodemailer's SMTPConnection (the
 * protocol engine under its SMTP transport). Used directly because the message stream is then read
 * only after the server has answered DATA with 354: once it has been read to the end, the server may
 * have the whole message, so a connection lost from then on is "outcome unknown"; before, nothing can
 * have been delivered.
 */
export class SmtpMailer implements Mailer {
  readonly kind = 'smtp';

  constructor(
    private readonly target: SmtpTarget,
    private readonly timeouts: SmtpTimeouts = DEFAULT_SMTP_TIMEOUTS,
    private readonly metrics?: Metrics,
  ) {}

  async wasSent(): Promise<undefined> {
    return undefined;
  }

  private async connectionOptions(parsed: ParsedSmtpUrl): Promise<SMTPConnectionOptions> {
    let host = parsed.host;
    // An organization's server is resolved here and connected to by address, so the name cannot
    // re-resolve somewhere private in between; TLS still checks the certificate against the name.
    if (this.target.refusePrivateAddresses) {
      host = (await resolvePublicHost(parsed.host))[0]!;
    }
    return {
      host,
      port: parsed.port,
      secure: parsed.secure,
      ...(this.target.requireTls && !parsed.secure ? { requireTLS: true } : {}),
      ...(host !== parsed.host ? { servername: parsed.host } : {}),
      connectionTimeout: this.timeouts.connectionMs,
      greetingTimeout: this.timeouts.greetingMs,
      socketTimeout: this.timeouts.socketMs,
      dnsTimeout: this.timeouts.connectionMs,
    };
  }

  async send(mail: OutgoingMail): Promise<SendResult> {
    let parsed: ParsedSmtpUrl;
    let options: SMTPConnectionOptions;
    try {
      parsed = parseSmtpUrl(this.target.url);
      options = await this.connectionOptions(parsed);
    } catch (error) {
      throw new MailerError(`SMTP server refused: ${(error as Error).message}`, 'not_sent');
    }
    const bytes = await composeMessage(mail, { keepBcc: false });
    const envelope = { from: mail.from.address, to: [...new Set(allRecipients(mail))] };
    const exchange = () =>
      new Promise<SMTPConnectionSendInfo>((resolve, reject) => {
        const connection = new SMTPConnection(options);
        let finished = false;
        let transmitted = false;
        const finish = (error: unknown, result?: SMTPConnectionSendInfo) => {
          if (finished) return;
          finished = true;
          clearTimeout(deadline);
          if (result) {
            connection.quit();
            resolve(result);
          } else {
            connection.close();
            reject(describeSmtpError(error, transmitted));
          }
        };
        const deadline = setTimeout(
          () => finish(smtpError(`no result within ${this.timeouts.totalMs} ms`, 'ETIMEDOUT')),
          this.timeouts.totalMs,
        );
        // `on`, not `once`: a socket error after the result must not become an uncaught 'error' event.
        connection.on('error', (error) => finish(error));
        connection.once('end', () => finish(smtpError('Connection closed unexpectedly', 'ECONNECTION')));
        const sendMessage = () => {
          const message = Readable.from([bytes]);
          message.once('end', () => {
            transmitted = true;
          });
          connection.send(envelope, message, (error, result) => finish(error, error ? undefined : result));
        };
        connection.connect((error) => {
          if (error) return finish(error);
          if (parsed.user === undefined || !connection.allowsAuth) return sendMessage();
          connection.login({ user: parsed.user, pass: parsed.password ?? '' }, (loginError) =>
            loginError ? finish(loginError) : sendMessage(),
          );
        });
      });
    // From the connection to the server's answer; building the message is not the server's time.
    const info = await observeOutbound(this.metrics, 'smtp', 'send', exchange);
    return {
      messageId: mail.messageId,
      accepted: info.accepted.map(String),
      rejected: info.rejected.map(String),
    };
  }
}

export interface MailSettings {
  /** The operator's SMTP server (`SMTP_URL`), used by accounts without their own. */
  smtpUrl: string | undefined;
  outboxDir: string;
  allowPrivateNetworkTargets: boolean;
  requireTls?: boolean;
  /** The SMTP exchange's limits (smtpTimeoutsFor: bounded by the send lease). */
  smtpTimeouts?: SmtpTimeouts;
  /** Where SMTP call durations are recorded (docs/observability.md). */
  metrics?: Metrics | undefined;
}

/** Between the end of an SMTP exchange and the end of its lease: time to record the outcome. */
const LEASE_MARGIN_MS = 5_000;

/**
 * The SMTP limits under a lease: a live send must end before its lease does, or a sweep could take it
 * over. The default lease (300 s) leaves the usual 2 minutes; a lease shorter than 125 s shortens the
 * whole exchange to the lease minus 5 s.
 */
export function smtpTimeoutsFor(leaseSeconds: number): SmtpTimeouts {
  const totalMs = Math.min(DEFAULT_SMTP_TIMEOUTS.totalMs, leaseSeconds * 1000 - LEASE_MARGIN_MS);
  return { ...DEFAULT_SMTP_TIMEOUTS, totalMs };
}

/** The mailer for an account: its own SMTP server, else the operator's `SMTP_URL`, else the outbox. */
export function mailerFor(accountSmtpUrl: string | null | undefined, settings: MailSettings): Mailer {
  const requireTls = settings.requireTls ?? false;
  if (accountSmtpUrl) {
    return new SmtpMailer(
      {
        url: accountSmtpUrl,
        refusePrivateAddresses: !settings.allowPrivateNetworkTargets,
        requireTls,
      },
      settings.smtpTimeouts,
      settings.metrics,
    );
  }
  if (settings.smtpUrl) {
    return new SmtpMailer(
      { url: settings.smtpUrl, refusePrivateAddresses: false, requireTls },
      settings.smtpTimeouts,
      settings.metrics,
    );
  }
  return new OutboxMailer(settings.outboxDir);
}

/** How a process sends mail, built once from the configuration (src/platform/clients.ts). */
export interface MailTransports {
  /** An account's own SMTP URL (opened), else the operator's `SMTP_URL`, else the outbox. */
  forSmtpUrl(accountSmtpUrl: string | null | undefined): Mailer;
  /** Asked about attempts that went to the outbox, whatever an account uses now. */
  outbox: OutboxMailer;
}

export function createMailTransports(settings: MailSettings): MailTransports {
  const outbox = new OutboxMailer(settings.outboxDir);
  return {
    forSmtpUrl: (accountSmtpUrl) =>
      accountSmtpUrl || settings.smtpUrl ? mailerFor(accountSmtpUrl, settings) : outbox,
    outbox,
  };
}
