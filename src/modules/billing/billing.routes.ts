import { Type } from 'typebox';
import { envelope } from '../../platform/http/envelope.ts';
import { DateTime, Envelope, errorResponses, Uuid } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import * as service from './billing.service.ts';

const Integration = Type.Object({
  organization_uid: Uuid,
  type: Type.Literal('http'),
  url: Type.String(),
  has_secret: Type.Boolean({ description: 'The secret itself is never returned' }),
  created_at: DateTime,
  updated_at: DateTime,
});
const Params = Type.Object({ organization_uid: Uuid });
const Body = Type.Object({
  type: Type.Literal('http'),
  url: Type.String({ minLength: 1, maxLength: 2000 }),
  secret: Type.String({
    minLength: 16,
    maxLength: 500,
    description: 'HMAC-SHA-256 key for the Remit-Signature header',
  }),
});

export async function billingRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const tags = ['Billing integration'];
  const path = '/api/organization/:organization_uid/integrations/billing';
  const response = { ...errorResponses, 200: Envelope(Integration), 201: Envelope(Integration) };

  app.put(
    path,
    {
      schema: {
        operationId: 'updateBillingIntegration',
        tags,
        summary: 'Configure the billing partner invoice updates are synced to (admins; 201 when new)',
        params: Params,
        body: Body,
        response,
      },
      config: { scope: 'invoices:write', errors: ['forbidden'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.params.organization_uid);
      const { created, integration } = await service.configureBillingIntegration(
        db,
        ctx,
        request.body,
        service.billingOptionsOf(deps),
      );
      const code = created ? 201 : 200;
      return reply
        .code(code)
        .send(
          envelope(
            integration,
            created ? 'Billing integration created' : 'Billing integration updated',
            code,
          ),
        );
    },
  );

  app.get(
    path,
    {
      schema: {
        operationId: 'getBillingIntegration',
        tags,
        summary: 'The billing integration (admins; never the secret)',
        params: Params,
        response,
      },
      config: { scope: 'invoices:read', errors: ['forbidden', 'not_found'] },
    },
    async (request) =>
      envelope(
        await service.getBillingIntegration(db, request.tenant(request.params.organization_uid)),
        'Billing integration',
      ),
  );

  app.delete(
    path,
    {
      schema: {
        operationId: 'deleteBillingIntegration',
        tags,
        summary: 'Remove the billing integration (admins)',
        params: Params,
        response,
      },
      config: { scope: 'invoices:write', errors: ['forbidden', 'not_found'] },
    },
    async (request) =>
      envelope(
        await service.removeBillingIntegration(db, request.tenant(request.params.organization_uid)),
        'Billing integration removed',
      ),
  );
}
