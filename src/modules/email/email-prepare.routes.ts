import { Type } from 'typebox';
import { BODY_LIMITS } from '../../platform/http/route-rules.ts';
import { envelope } from '../../platform/http/envelope.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { emailFields } from './email-fields.ts';
import {
  EmailFieldsEnvelope,
  EmailFieldsQuery,
  PrepareEmailBody,
  PreparedEmail,
} from './email-prepare.schemas.ts';
import { prepareEmail } from './email-prepare.service.ts';

/**
 * `POST /api/email/prepare` and `GET /api/email/fields`. Prepare needs `email:write`: it composes email
 * content (and may spend text-generation tokens), the first step of writing an email; it reads the
 * invoice it is about without `invoices:read`, as the email it writes shows that invoice's values to
 * its recipient anyway. Listing the fields is a read: `email:read`.
 */
export async function emailPrepareRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const { generator } = deps.clients;
  const tags = ['Email'];
  app.addSchema(PreparedEmail);

  app.post(
    '/api/email/prepare',
    {
      schema: {
        operationId: 'prepareEmail',
        tags,
        summary: 'Prepare an email about an invoice, by template or by inference (interface 2.9, 4.6)',
        description:
          'Returns the bare object (no envelope). Template mode replaces `{token}` placeholders (GET /api/email/fields); ' +
          'inference mode composes subject and body with the text generator (built-in composer, or the configured ' +
          'OpenAI-compatible API) and falls back to the supplied subject and body_text on failure. Unknown or ' +
          'unresolvable tokens and generation failures are listed in `errors` of a 200. `body_html` is built from the ' +
          'final body_text with all input escaped.',
        body: PrepareEmailBody,
        response: { 200: Type.Ref('PreparedEmail'), ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: { scope: 'email:write', idempotency: 'deferred', errors: ['not_found'] },
    },
    async (request) => (await prepareEmail(db, generator, request.tenant(), request.body)).email,
  );

  app.get(
    '/api/email/fields',
    {
      schema: {
        operationId: 'listEmailFields',
        tags,
        summary: 'The dynamic fields ({token} placeholders) of email templates for a context type',
        querystring: EmailFieldsQuery,
        response: { 200: EmailFieldsEnvelope, ...errorResponses },
      },
      config: { scope: 'email:read' },
    },
    async (request) => {
      // Resolves the caller's organization like every route does (403 when the caller has none).
      request.tenant();
      return envelope({ items: emailFields(request.query.context_type) }, 'Email fields');
    },
  );
}
