import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  CreateEmailAccountBody,
  EmailAccount,
  EmailAccountEnvelope,
  EmailAccountListEnvelope,
  ListEmailAccountsQuery,
  UidParams,
} from './email-accounts.schemas.ts';
import * as service from './email-accounts.service.ts';

export async function emailAccountRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const options = {
    allowPrivateNetworkTargets: deps.config.allowPrivateNetworkTargets,
    secrets: deps.secrets,
  };
  app.addSchema(EmailAccount);
  const tags = ['Email'];

  app.post(
    '/api/email/accounts',
    {
      schema: {
        operationId: 'createEmailAccount',
        tags,
        summary: 'Connect an email account drafts are sent from (admins; smtp_url is never returned)',
        body: CreateEmailAccountBody,
        response: { 201: EmailAccountEnvelope, ...errorResponses },
      },
      config: { scope: 'email:write', idempotency: 'deferred', errors: ['forbidden', 'already_exists'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      const account = await service.createEmailAccount(db, ctx, request.body, options);
      return reply.code(201).send(envelope(account, 'Email account created', 201));
    },
  );

  app.get(
    '/api/email/accounts',
    {
      schema: {
        operationId: 'listEmailAccounts',
        tags,
        summary: "The organization's email accounts, oldest first",
        querystring: ListEmailAccountsQuery,
        response: { 200: EmailAccountListEnvelope, ...errorResponses },
      },
      config: { scope: 'email:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listEmailAccounts(db, deps.secrets, ctx, page);
      return envelope({ items, _meta: pageMeta(page, total) }, 'Email accounts');
    },
  );

  app.get(
    '/api/email/accounts/:uid',
    {
      schema: {
        operationId: 'getEmailAccount',
        tags,
        summary: 'Get an email account',
        params: UidParams,
        response: { 200: EmailAccountEnvelope, ...errorResponses },
      },
      config: { scope: 'email:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.getEmailAccount(db, deps.secrets, request.tenant(), request.params.uid),
        'Email account',
      ),
  );
}
