import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

/**
 * A real SMTP server on 127.0.0.1 (a free port), scripted by the test: it accepts (and keeps the
 * message, its envelope and its parse), rejects the message with a reply code, or drops the
 * connection once the whole message has arrived — the case where the client cannot know the outcome.
 * Plain text only (`STARTTLS` disabled), optionally with AUTH PLAIN/LOGIN against one user.
 */
export type SmtpBehaviour =
  | { kind: 'accept' }
  /** Refuses at the end of DATA, e.g. `550 mailbox unavailable`; nothing is stored. */
  | { kind: 'reject'; code: number; message: string }
  /** Reads the whole message (it is stored), then closes the socket without answering. */
  | { kind: 'drop' };

export interface ReceivedMail {
  from: string;
  /** Every RCPT TO, Bcc included: the envelope, not the headers. */
  recipients: string[];
  raw: Buffer;
  parsed: ParsedMail;
  user: string | undefined;
  outcome: 'accepted' | 'rejected' | 'dropped';
  /** The SMTP session (one connection) it came on; see `closedSessions`. */
  sessionId: string;
}

export class FakeSmtp {
  readonly received: ReceivedMail[] = [];
  behaviour: SmtpBehaviour = { kind: 'accept' };
  /** Runs when a message has arrived, before the server answers (to look at the sender's state then). */
  onMessage: ((mail: ReceivedMail) => Promise<void>) | undefined;
  /** Sessions whose connection has closed (the client quit, or its process died). */
  readonly closedSessions = new Set<string>();
  private server: SMTPServer;
  port = 0;

  constructor(private readonly credentials?: { user: string; pass: string }) {
    this.server = new SMTPServer({
      disabledCommands: credentials ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
      authOptional: !credentials,
      allowInsecureAuth: true,
      logger: false,
      onClose: (session) => {
        this.closedSessions.add(session.id);
      },
      onAuth: (auth, _session, callback) => {
        if (credentials && auth.username === credentials.user && auth.password === credentials.pass) {
          callback(null, { user: auth.username });
        } else {
          callback(new Error('Invalid username or password'));
        }
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          void this.record(session, Buffer.concat(chunks)).then(async () => {
            await this.onMessage?.(this.received[this.received.length - 1]!);
            const behaviour = this.behaviour;
            if (behaviour.kind === 'accept') return callback(null, 'Queued as fake');
            if (behaviour.kind === 'reject') {
              const error = new Error(behaviour.message) as Error & { responseCode: number };
              error.responseCode = behaviour.code;
              return callback(error);
            }
            this.dropConnectionOf(session);
          });
        });
      },
    });
  }

  private async record(session: SMTPServerSession, raw: Buffer) {
    const outcome =
      this.behaviour.kind === 'accept'
        ? 'accepted'
        : this.behaviour.kind === 'reject'
          ? 'rejected'
          : 'dropped';
    const mailFrom = session.envelope.mailFrom;
    this.received.push({
      from: mailFrom ? mailFrom.address : '',
      recipients: session.envelope.rcptTo.map((r) => r.address),
      raw,
      parsed: await simpleParser(raw),
      user: typeof session.user === 'string' ? session.user : undefined,
      outcome,
      sessionId: session.id,
    });
  }

  private dropConnectionOf(session: SMTPServerSession) {
    for (const connection of this.server.connections) {
      if (connection.session?.id === session.id) connection._socket.destroy();
    }
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  /** `smtp://[user:pass@]127.0.0.1:<port>`. */
  url(): string {
    const auth = this.credentials
      ? `${encodeURIComponent(this.credentials.user)}:${encodeURIComponent(this.credentials.pass)}@`
      : '';
    return `smtp://${auth}127.0.0.1:${this.port}`;
  }

  /** Accepted messages only. */
  accepted(): ReceivedMail[] {
    return this.received.filter((m) => m.outcome === 'accepted');
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
