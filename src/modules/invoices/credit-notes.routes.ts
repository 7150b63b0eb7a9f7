import { envelope } from '../../platform/http/envelope.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  CreateCreditNoteBody,
  CreditNote,
  CreditNoteChangeEnvelope,
  CreditNoteParams,
  CreditNotesEnvelope,
  VoidCreditNoteBody,
} from './credit-notes.schemas.ts';
import * as service from './credit-notes.service.ts';
import { moneyTargetExists } from './invoice-exists.ts';
import { InvoiceParams } from './invoices.schemas.ts';

/** Credit notes against an invoice (docs/invoices.md#payments-refunds-and-credit-notes). */
export async function creditNoteRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(CreditNote);
  const tags = ['Invoices'];

  app.get(
    '/api/invoices/:uid/credit-notes',
    {
      schema: {
        operationId: 'listInvoiceCreditNotes',
        tags,
        summary: "An invoice's credit notes, oldest first (voided ones included)",
        params: InvoiceParams,
        response: { 200: CreditNotesEnvelope, ...errorResponses },
      },
      config: { scope: 'invoices:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        { items: await service.listCreditNotes(db, request.tenant(), request.params.uid) },
        'Credit notes',
      ),
  );

  app.post(
    '/api/invoices/:uid/credit-notes',
    {
      schema: {
        operationId: 'createInvoiceCreditNote',
        tags,
        summary:
          'Issue a credit note against what the invoice still owes (admins); one that leaves nothing settles it',
        params: InvoiceParams,
        body: CreateCreditNoteBody,
        response: { 201: CreditNoteChangeEnvelope, ...errorResponses },
      },
      config: {
        scope: 'invoices:write',
        errors: ['forbidden', 'not_found', 'invalid_state'],
        exists: (ctx, { uid, credit_note_uid }) =>
          moneyTargetExists(db, ctx, uid!, { creditNoteUid: credit_note_uid }),
      },
    },
    async (request, reply) => {
      const data = await service.createCreditNote(
        db,
        deps.jobs,
        request.tenant(),
        request.params.uid,
        request.body,
      );
      return reply.code(201).send(envelope(data, 'Credit note issued', 201));
    },
  );

  app.post(
    '/api/invoices/:uid/credit-notes/:credit_note_uid/void',
    {
      schema: {
        operationId: 'voidInvoiceCreditNote',
        tags,
        summary: 'Void a credit note (admins); a paid invoice that owes again reopens',
        params: CreditNoteParams,
        body: VoidCreditNoteBody,
        response: { 200: CreditNoteChangeEnvelope, ...errorResponses },
      },
      config: {
        scope: 'invoices:write',
        errors: ['forbidden', 'not_found', 'invalid_state'],
        exists: (ctx, { uid, credit_note_uid }) =>
          moneyTargetExists(db, ctx, uid!, { creditNoteUid: credit_note_uid }),
      },
      // The reason is optional, and so is the body: none at all is {}.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) =>
      envelope(
        await service.voidCreditNote(
          db,
          deps.jobs,
          request.tenant(),
          request.params.uid,
          request.params.credit_note_uid,
          request.body,
        ),
        'Credit note voided',
      ),
  );
}
