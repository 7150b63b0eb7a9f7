import { callOrigin } from '../../platform/http/auth.ts';
import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  ApiKey,
  ApiKeyEnvelope,
  ApiKeyListEnvelope,
  ApiKeyParams,
  ApiKeyScopesEnvelope,
  CreateApiKeyBody,
  ListApiKeysQuery,
  OrganizationQuery,
} from './api-keys.schemas.ts';
import * as service from './api-keys.service.ts';

export async function apiKeyRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const pepper = deps.config.apiKeyPepper;
  app.addSchema(ApiKey);

  app.post(
    '/api/api-keys',
    {
      schema: {
        operationId: 'createApiKey',
        tags: ['API keys'],
        summary: 'Create an API key (the full key is returned once)',
        body: CreateApiKeyBody,
        response: { 200: ApiKeyEnvelope, ...errorResponses },
      },
      config: { scope: 'api_keys:write', idempotencyOmitDataField: 'key', errors: ['forbidden'] },
    },
    async (request) => {
      const ctx = request.tenant(request.body.organization_uid);
      const key = await service.createApiKey(db, pepper, ctx, request.body);
      return envelope(key, 'API key created');
    },
  );

  app.get(
    '/api/api-keys',
    {
      schema: {
        operationId: 'listApiKeys',
        tags: ['API keys'],
        summary: "List the organization's API keys (admins: all; members: their own)",
        querystring: ListApiKeysQuery,
        response: { 200: ApiKeyListEnvelope, ...errorResponses },
      },
      config: { scope: 'api_keys:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listApiKeys(db, ctx, page);
      return envelope({ items, _meta: pageMeta(page, total) }, 'API keys');
    },
  );

  app.get(
    '/api/api-keys/scopes',
    {
      schema: {
        operationId: 'listApiKeyScopes',
        tags: ['API keys'],
        summary: 'The scopes a key may carry, what each allows, and which only admins hold',
        querystring: OrganizationQuery,
        response: { 200: ApiKeyScopesEnvelope, ...errorResponses },
      },
      config: { scope: 'api_keys:read' },
    },
    async (request) => {
      // Resolves the caller's organization like every route does (403 for one they are not in).
      request.tenant(request.query.organization_uid);
      return envelope({ items: service.listScopes() }, 'API key scopes');
    },
  );

  app.delete(
    '/api/api-keys/:uid',
    {
      schema: {
        operationId: 'revokeApiKey',
        tags: ['API keys'],
        summary: 'Revoke an API key (401 from the very next request)',
        params: ApiKeyParams,
        response: { 200: ApiKeyEnvelope, ...errorResponses },
      },
      config: { scope: 'api_keys:write', errors: ['not_found'] },
    },
    async (request) => {
      const key = await service.revokeApiKey(db, request.principal!, callOrigin(request), request.params.uid);
      return envelope(key, 'API key revoked');
    },
  );
}
