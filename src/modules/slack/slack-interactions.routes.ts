import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { handleInteraction, type SlackDeps } from './slack-interactions.service.ts';

/** Slack sends interactions as a form with one field, `payload` (JSON); its signature covers these bytes. */
const FORM = 'application/x-www-form-urlencoded';

/** Slack's answer to a modal submission: nothing (it closes) or errors shown under the reason. */
const SlackReply = Type.Object(
  {
    response_action: Type.Optional(Type.Literal('errors')),
    errors: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: false },
);

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Slack's interactivity endpoint (docs/slack.md#the-interactivity-endpoint): the Request URL of the
 * Slack app. No key and no session — Slack's signature is the credential. Its own scope parses the
 * form body as the raw text Slack signed.
 */
export async function slackRoutes(app: App, deps: AppDeps) {
  const chat = deps.clients.chat;
  const slackDeps: SlackDeps = {
    db: deps.database.db,
    jobs: deps.jobs,
    chat,
    signingSecret: deps.config.chat.kind === 'slack' ? deps.config.chat.signingSecret : undefined,
  };
  await app.register(async (scope) => {
    scope.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: 256 * 1024 }, (_request, body, done) =>
      done(null, body),
    );
    scope.post(
      '/api/slack/interactions',
      {
        config: {
          public: true,
          idempotency: 'none',
          errors: ['invalid_signature', 'bad_request', 'not_found', 'unsupported_media_type'],
        },
        schema: {
          operationId: 'receiveSlackInteraction',
          tags: ['Slack'],
          summary:
            "Slack's interactivity Request URL: Approve and Reject clicks on approval messages, and the reject reason modal (signed by Slack)",
          security: [],
          consumes: [FORM],
          headers: Type.Object({
            'x-slack-request-timestamp': Type.Optional(Type.String({ maxLength: 20 })),
            'x-slack-signature': Type.Optional(Type.String({ maxLength: 200 })),
          }),
          body: Type.String({ maxLength: 256 * 1024, description: 'The form Slack posts: `payload=<JSON>`' }),
          response: { 200: SlackReply, ...errorResponses },
        },
      },
      async (request, reply) => {
        const answer = await handleInteraction(
          slackDeps,
          {
            rawBody: request.body as string,
            timestamp: header(request, 'x-slack-request-timestamp'),
            signature: header(request, 'x-slack-signature'),
          },
          { requestId: request.id, clientAddress: request.ip || null },
        );
        reply.header('Cache-Control', 'no-store');
        return answer ?? {};
      },
    );
  });
}
