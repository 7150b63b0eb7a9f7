import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  BillingContact,
  CreatePartyBody,
  ListPartiesQuery,
  Party,
  PartyEnvelope,
  PartyListEnvelope,
  PatchPartyBody,
  UidParams,
} from './parties.schemas.ts';
import * as service from './parties.service.ts';

export async function partyRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(BillingContact);
  app.addSchema(Party);
  const tags = ['Parties'];

  app.post(
    '/api/parties',
    {
      schema: {
        operationId: 'createParty',
        tags,
        summary: 'Create a client or vendor',
        body: CreatePartyBody,
        response: { 201: PartyEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:write' },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      const party = await service.createParty(db, ctx, request.body);
      return reply.code(201).send(envelope(party, 'Party created', 201));
    },
  );

  app.get(
    '/api/parties/:uid',
    {
      schema: {
        operationId: 'getParty',
        tags,
        summary: 'Get a party',
        params: UidParams,
        response: { 200: PartyEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read', errors: ['not_found'] },
    },
    async (request) => envelope(await service.getParty(db, request.tenant(), request.params.uid), 'Party'),
  );

  app.patch(
    '/api/parties/:uid',
    {
      schema: {
        operationId: 'updateParty',
        tags,
        summary: 'Update a party (only the sent fields change; billing_contact null removes it)',
        params: UidParams,
        body: PatchPartyBody,
        response: { 200: PartyEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:write', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.patchParty(db, deps.jobs, request.tenant(), request.params.uid, request.body),
        'Party updated',
      ),
  );

  app.get(
    '/api/parties',
    {
      schema: {
        operationId: 'listParties',
        tags,
        summary: 'List parties, newest change first; q matches name, address or tax id',
        querystring: ListPartiesQuery,
        response: { 200: PartyListEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listParties(
        db,
        ctx,
        { q: request.query.q, role: request.query.role },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Parties');
    },
  );
}
