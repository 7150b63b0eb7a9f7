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
      config: {
        scope: 'invoices:write',
        errors: ['not_found'],
        exists: (ctx, { uid }) => service.getParty(db, ctx, uid!),
      },
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
        description:
          'Active parties only by default: `include_archived=true` adds the archived ones, `archived=true` ' +
          'lists only those (docs/invoices.md#archiving-a-party).',
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
        {
          q: request.query.q,
          role: request.query.role,
          archived: request.query.archived,
          includeArchived: request.query.include_archived,
        },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Parties');
    },
  );

  for (const archive of [true, false]) {
    app.post(
      archive ? '/api/parties/:uid/archive' : '/api/parties/:uid/unarchive',
      {
        schema: {
          operationId: archive ? 'archiveParty' : 'unarchiveParty',
          tags,
          summary: archive
            ? 'Archive a party: out of the default list and off new invoices; its invoices keep it'
            : 'Unarchive a party: back in the list and usable on invoices',
          description: archive
            ? 'Answers 200 with the party, `archived_at` set. Archiving an archived party changes nothing ' +
              '(the first `archived_at` stays). Parties are archived, never deleted: invoices point at them. ' +
              'See docs/invoices.md#archiving-a-party.'
            : 'Answers 200 with the party, `archived_at` null. Unarchiving an active party changes nothing.',
          params: UidParams,
          response: { 200: PartyEnvelope, ...errorResponses },
        },
        config: { scope: 'invoices:write', errors: ['not_found'] },
      },
      async (request) =>
        envelope(
          await service.setPartyArchived(db, deps.jobs, request.tenant(), request.params.uid, archive),
          archive ? 'Party archived' : 'Party unarchived',
        ),
    );
  }
}
