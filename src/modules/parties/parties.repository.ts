import { and, count, desc, eq, ilike, inArray, isNotNull, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { containsPattern } from '../../platform/db/text-search.ts';
import { invoices } from '../invoices/invoices.tables.ts';
import { parties, partyContacts } from './parties.tables.ts';

export type PartyRow = typeof parties.$inferSelect;
export type ContactRow = typeof partyContacts.$inferSelect;
export interface PartyWithContact {
  party: PartyRow;
  contact: ContactRow | null;
}

const selectWithContact = (db: DbOrTx) =>
  db
    .select({ party: parties, contact: partyContacts })
    .from(parties)
    .leftJoin(
      partyContacts,
      and(
        eq(partyContacts.organizationUid, parties.organizationUid),
        eq(partyContacts.partyUid, parties.uid),
      ),
    );

export async function insertParty(db: DbOrTx, values: typeof parties.$inferInsert): Promise<PartyRow> {
  const [row] = await db.insert(parties).values(values).returning();
  return row!;
}

export async function upsertContact(
  db: DbOrTx,
  organizationUid: string,
  partyUid: string,
  values: Partial<Pick<ContactRow, 'name' | 'title' | 'email' | 'phone'>>,
): Promise<void> {
  await db
    .insert(partyContacts)
    .values({ organizationUid, partyUid, ...values })
    .onConflictDoUpdate({
      target: [partyContacts.organizationUid, partyContacts.partyUid],
      set: { ...values, updatedAt: sql`now()` },
    });
}

export async function deleteContact(db: DbOrTx, organizationUid: string, partyUid: string): Promise<void> {
  await db
    .delete(partyContacts)
    .where(and(eq(partyContacts.organizationUid, organizationUid), eq(partyContacts.partyUid, partyUid)));
}

export async function findParty(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
): Promise<PartyWithContact | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await selectWithContact(db).where(
    and(inArray(parties.organizationUid, organizationUids), eq(parties.uid, uid)),
  );
  return row;
}

export async function findPartiesByUids(
  db: DbOrTx,
  organizationUid: string,
  uids: string[],
): Promise<PartyWithContact[]> {
  if (uids.length === 0) return [];
  return selectWithContact(db).where(
    and(eq(parties.organizationUid, organizationUid), inArray(parties.uid, uids)),
  );
}

export async function updateParty(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<Pick<PartyRow, 'name' | 'role' | 'address' | 'taxId'>>,
): Promise<void> {
  await db
    .update(parties)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(parties.organizationUid, organizationUid), eq(parties.uid, uid)));
}

/** Invoices keep copies of their parties' names for sorting and search; a rename updates them. */
export async function refreshInvoicePartyNames(
  db: DbOrTx,
  organizationUid: string,
  party: PartyRow,
): Promise<void> {
  await db
    .update(invoices)
    .set({ clientName: party.name })
    .where(and(eq(invoices.organizationUid, organizationUid), eq(invoices.clientPartyUid, party.uid)));
  await db
    .update(invoices)
    .set({ vendorName: party.name, vendorNit: party.taxId ?? '' })
    .where(
      and(eq(invoices.organizationUid, organizationUid), eq(invoices.serviceProviderPartyUid, party.uid)),
    );
}

/** Which parties a list shows: active ones (the default), archived ones, or both. */
export type PartyArchiveFilter = 'active' | 'archived' | 'all';

/**
 * Archives (`archive` true) or unarchives the party, only if it is not so already: of two concurrent
 * calls one changes it and the other finds nothing to do. Returns whether it changed.
 */
export async function setPartyArchived(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  archive: boolean,
): Promise<boolean> {
  const rows = await db
    .update(parties)
    .set({ archivedAt: archive ? sql`now()` : null, updatedAt: sql`now()` })
    .where(
      and(
        eq(parties.organizationUid, organizationUid),
        eq(parties.uid, uid),
        archive ? isNull(parties.archivedAt) : isNotNull(parties.archivedAt),
      ),
    )
    .returning({ uid: parties.uid });
  return rows.length === 1;
}

export async function listParties(
  db: DbOrTx,
  organizationUid: string,
  options: {
    q?: string | undefined;
    role?: 'client' | 'vendor' | undefined;
    archived: PartyArchiveFilter;
    limit: number;
    offset: number;
  },
): Promise<{ rows: PartyWithContact[]; total: number }> {
  const conditions: (SQL | undefined)[] = [eq(parties.organizationUid, organizationUid)];
  if (options.role) conditions.push(eq(parties.role, options.role));
  // Active only (the default) reads parties_org_active_updated_idx, a partial index of exactly those.
  if (options.archived === 'active') conditions.push(isNull(parties.archivedAt));
  if (options.archived === 'archived') conditions.push(isNotNull(parties.archivedAt));
  if (options.q) {
    const pattern = containsPattern(options.q);
    conditions.push(
      or(ilike(parties.name, pattern), ilike(parties.address, pattern), ilike(parties.taxId, pattern)),
    );
  }
  const where = and(...conditions);
  const [rows, totals] = await Promise.all([
    selectWithContact(db)
      .where(where)
      .orderBy(desc(parties.updatedAt), desc(parties.uid))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(parties).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}
