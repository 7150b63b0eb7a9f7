import path from 'node:path';
import type { Config } from '../config.ts';
import { createChatClient, type ChatClient } from './chat/chat.ts';
import { createTextGenerator, type TextGenerator } from './llm/text-generator.ts';
import { createMailTransports, smtpTimeoutsFor, type MailTransports } from './mail/mailer.ts';
import type { Metrics } from './observability/metrics.ts';

/**
 * The outside services' clients (CONTRACT §6), built once per process from the configuration and
 * handed to routes and jobs through the app's dependencies: one Slack client, one text generator,
 * one set of mail transports, whichever entry point uses them.
 */
export interface Clients {
  chat: ChatClient;
  generator: TextGenerator;
  mail: MailTransports;
}

export function createClients(config: Config, metrics?: Metrics): Clients {
  return {
    chat: createChatClient(config.chat, metrics),
    generator: createTextGenerator(config.llm, metrics),
    mail: createMailTransports({
      smtpUrl: config.smtpUrl,
      outboxDir: path.join(config.dataDir, 'outbox'),
      allowPrivateNetworkTargets: config.allowPrivateNetworkTargets,
      requireTls: config.smtpRequireTls,
      // A live send ends before its lease does (docs/email-sending.md#no-double-send).
      smtpTimeouts: smtpTimeoutsFor(config.emailSendLeaseS),
      metrics,
    }),
  };
}
