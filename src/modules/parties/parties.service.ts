import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import { inOrganization, memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { notFound } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import * as repo from './parties.repository.ts';
import type { ContactInputT, CreatePartyBodyT, PatchPartyBodyT } from './parties.schemas.ts';
import { withTextSearchIndexes } from '../../platform/db/session-role.ts';
import { changesBetween, recordAuditEvent, recordUpdate } from '../audit/audit.service.ts';

export function toPartyView({ party, contact }: repo.PartyWithContact) {
  return {
    uid: party.uid,
    organization_uid: party.organizationUid,
    name: party.name,
    role: party.role,
    address: party.address,
    tax_id: party.taxId,
    billing_contact: contact
      ? {
          uid: contact.uid,
          party_uid: contact.partyUid,
          name: contact.name,
          title: contact.title,
          email: contact.email,
          phone: contact.phone,
        }
      : null,
    archived_at: party.archivedAt,
    created_at: party.createdAt,
    updated_at: party.updatedAt,
  };
}
export type PartyView = ReturnType<typeof toPartyView>;

function contactValues(input: ContactInputT) {
  return {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.title !== undefined ? { title: input.title } : {}),
    ...(input.email !== undefined ? { email: input.email.trim().toLowerCase() } : {}),
    ...(input.phone !== undefined ? { phone: input.phone } : {}),
  };
}

export async function createParty(db: Db, ctx: RequestContext, body: CreatePartyBodyT): Promise<PartyView> {
  return db.transaction(async (tx) => {
    const party = await repo.insertParty(tx, {
      organizationUid: ctx.organizationUid,
      name: body.name.trim(),
      role: body.role,
      address: body.address ?? '',
      taxId: body.tax_id ?? null,
    });
    if (body.billing_contact)
      await repo.upsertContact(tx, ctx.organizationUid, party.uid, contactValues(body.billing_contact));
    const view = toPartyView((await repo.findParty(tx, [ctx.organizationUid], party.uid))!);
    await recordAuditEvent(tx, ctx, {
      organizationUid: party.organizationUid,
      action: 'party.created',
      entityUid: party.uid,
      changes: changesBetween(null, view),
    });
    return view;
  });
}

/** A party of any organization the caller belongs to; anything else is 404. */
export async function getParty(db: Db, ctx: RequestContext, uid: string): Promise<PartyView> {
  const found = await repo.findParty(db, memberOrganizationUids(ctx), uid);
  if (!found) throw notFound('Party');
  return toPartyView(found);
}

export async function patchParty(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  uid: string,
  body: PatchPartyBodyT,
): Promise<PartyView> {
  return db.transaction(async (tx) => {
    const found = await repo.findParty(tx, memberOrganizationUids(ctx), uid);
    if (!found) throw notFound('Party');
    const org = found.party.organizationUid;
    await repo.updateParty(tx, org, uid, {
      ...(body.name !== undefined ? { name: body.name.trim() } : {}),
      ...(body.role !== undefined ? { role: body.role } : {}),
      ...(body.address !== undefined ? { address: body.address } : {}),
      ...(body.tax_id !== undefined ? { taxId: body.tax_id } : {}),
    });
    if (body.billing_contact === null) await repo.deleteContact(tx, org, uid);
    else if (body.billing_contact)
      await repo.upsertContact(tx, org, uid, contactValues(body.billing_contact));
    const updated = (await repo.findParty(tx, [org], uid))!;
    if (body.name !== undefined || body.tax_id !== undefined)
      await repo.refreshInvoicePartyNames(tx, org, updated.party);
    const view = toPartyView(updated);
    const before = toPartyView(found);
    // The billing contact is part of the party: its changes show as billing_contact's before and after.
    await recordUpdate(tx, ctx, {
      organizationUid: org,
      action: 'party.updated',
      entityUid: uid,
      before,
      after: view,
    });
    // Reported as the party's own event, as a payments platform reports a customer's change: its
    // invoices show the new name from now on without an invoice.updated each (a client with thousands
    // of invoices would otherwise write thousands of events in this transaction).
    const changed = (Object.keys(view) as (keyof PartyView)[]).filter(
      (key) => key !== 'updated_at' && JSON.stringify(before[key]) !== JSON.stringify(view[key]),
    );
    if (changed.length > 0) {
      await emitEvent(
        tx,
        jobs,
        ctx,
        'party.updated',
        { type: 'party', uid },
        {
          party: view,
          changed_fields: changed,
        },
      );
    }
    return view;
  });
}

export interface PartyListFilters {
  q?: string | undefined;
  role?: 'client' | 'vendor' | undefined;
  /** true: archived only; false: active only; omitted: active only unless `includeArchived`. */
  archived?: boolean | undefined;
  includeArchived?: boolean | undefined;
}

export async function listParties(db: Db, ctx: RequestContext, filters: PartyListFilters, page: PageRequest) {
  const q = filters.q?.trim() || undefined;
  const archived: repo.PartyArchiveFilter =
    filters.archived === true
      ? 'archived'
      : filters.archived === false || !filters.includeArchived
        ? 'active'
        : 'all';
  const { rows, total } = await withTextSearchIndexes(q !== undefined, () =>
    repo.listParties(db, ctx.organizationUid, {
      q,
      role: filters.role,
      archived,
      limit: page.perPage,
      offset: offsetOf(page),
    }),
  );
  return { items: rows.map(toPartyView), total };
}

/**
 * `POST /api/parties/{uid}/archive` and `…/unarchive`. Archiving is the delete of a party: invoices
 * point at it, so it stays, out of the default list and unusable on a new invoice, and can come back.
 * Archiving an archived party (or unarchiving an active one) answers the party as it is and records
 * nothing. A change is audited (`party.archived`, `party.unarchived`) and reported as `party.updated`
 * with `changed_fields: ["archived_at"]`, like any other change to what GET shows.
 */
export async function setPartyArchived(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  uid: string,
  archive: boolean,
): Promise<PartyView> {
  return db.transaction(async (tx) => {
    const found = await repo.findParty(tx, memberOrganizationUids(ctx), uid);
    if (!found) throw notFound('Party');
    const org = found.party.organizationUid;
    if (!(await repo.setPartyArchived(tx, org, uid, archive))) {
      return toPartyView((await repo.findParty(tx, [org], uid))!);
    }
    const view = toPartyView((await repo.findParty(tx, [org], uid))!);
    const within = inOrganization(ctx, org);
    await recordAuditEvent(tx, within, {
      organizationUid: org,
      action: archive ? 'party.archived' : 'party.unarchived',
      entityUid: uid,
      changes: changesBetween({ archived_at: found.party.archivedAt }, { archived_at: view.archived_at }),
    });
    await emitEvent(
      tx,
      jobs,
      within,
      'party.updated',
      { type: 'party', uid },
      { party: view, changed_fields: ['archived_at'] },
    );
    return view;
  });
}

export type { PartyWithContact } from './parties.repository.ts';

/** Parties with their billing contact, for other modules' reads (an invoice's parties). */
export function findPartiesByUids(
  db: DbOrTx,
  organizationUid: string,
  uids: string[],
): Promise<repo.PartyWithContact[]> {
  return repo.findPartiesByUids(db, organizationUid, uids);
}
