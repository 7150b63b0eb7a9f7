import { and, count, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { partyContacts, parties } from '../parties/parties.tables.ts';
import { conversations, messages } from './conversations.tables.ts';

export type ConversationRow = typeof conversations.$inferSelect;
export type MessageRow = typeof messages.$inferSelect;

export async function insertConversation(
  db: DbOrTx,
  values: typeof conversations.$inferInsert,
): Promise<ConversationRow> {
  const [row] = await db.insert(conversations).values(values).returning();
  return row!;
}

export async function findConversation(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
): Promise<ConversationRow | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await db
    .select()
    .from(conversations)
    .where(and(inArray(conversations.organizationUid, organizationUids), eq(conversations.uid, uid)));
  return row;
}

export async function insertMessage(db: DbOrTx, values: typeof messages.$inferInsert): Promise<MessageRow> {
  const [row] = await db.insert(messages).values(values).returning();
  await db
    .update(conversations)
    .set({ updatedAt: sql`now()` })
    .where(
      and(
        eq(conversations.organizationUid, values.organizationUid),
        eq(conversations.uid, values.conversationUid),
      ),
    );
  return row!;
}

export async function listMessages(db: DbOrTx, organizationUid: string, conversationUid: string) {
  return db
    .select()
    .from(messages)
    .where(and(eq(messages.organizationUid, organizationUid), eq(messages.conversationUid, conversationUid)))
    .orderBy(messages.createdAt, messages.uid);
}

export async function listConversations(
  db: DbOrTx,
  organizationUid: string,
  filters: { status?: string | undefined; partyUid?: string | undefined; limit: number; offset: number },
) {
  const where: SQL[] = [eq(conversations.organizationUid, organizationUid)];
  if (filters.status) where.push(sql`${conversations.status} = ${filters.status}`);
  if (filters.partyUid) where.push(eq(conversations.partyUid, filters.partyUid));
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(conversations)
      .where(and(...where))
      .orderBy(desc(conversations.createdAt), desc(conversations.uid))
      .limit(filters.limit)
      .offset(filters.offset),
    db
      .select({ total: count() })
      .from(conversations)
      .where(and(...where)),
  ]);
  return { rows, total: totals?.total ?? 0 };
}

/** The conversation holding the message that `In-Reply-To` names. */
export async function findConversationByMessageId(db: DbOrTx, organizationUid: string, messageId: string) {
  const [row] = await db
    .select({ conversation: conversations })
    .from(messages)
    .innerJoin(
      conversations,
      and(
        eq(conversations.organizationUid, messages.organizationUid),
        eq(conversations.uid, messages.conversationUid),
      ),
    )
    .where(and(eq(messages.organizationUid, organizationUid), eq(messages.messageId, messageId)))
    .limit(1);
  return row?.conversation;
}

/** The newest open email conversation with this subject in which this address has written or been written to. */
export async function findConversationBySubjectAndAddress(
  db: DbOrTx,
  organizationUid: string,
  normalizedSubject: string,
  address: string,
) {
  const [row] = await db
    .select({ conversation: conversations })
    .from(conversations)
    .where(
      and(
        eq(conversations.organizationUid, organizationUid),
        eq(conversations.channel, 'email'),
        sql`${conversations.status} <> 'closed'`,
        sql`lower(${conversations.subject}) = ${normalizedSubject.toLowerCase()}`,
        sql`exists (select 1 from messages m where m.organization_uid = ${conversations.organizationUid}
              and m.conversation_uid = ${conversations.uid}
              and (lower(m.from_email) = ${address} or ${address} = any (select lower(x) from unnest(m.to_addresses) x)))`,
      ),
    )
    .orderBy(desc(conversations.updatedAt))
    .limit(1);
  return row?.conversation;
}

/** The client party whose billing contact writes from this address. */
export async function findPartyByContactEmail(db: DbOrTx, organizationUid: string, email: string) {
  const [row] = await db
    .select({ uid: parties.uid, name: parties.name, role: parties.role })
    .from(partyContacts)
    .innerJoin(
      parties,
      and(
        eq(parties.organizationUid, partyContacts.organizationUid),
        eq(parties.uid, partyContacts.partyUid),
      ),
    )
    .where(
      and(eq(partyContacts.organizationUid, organizationUid), sql`lower(${partyContacts.email}) = ${email}`),
    )
    .orderBy(sql`${parties.role} = 'client' desc`, parties.createdAt)
    .limit(1);
  return row;
}

export async function partyExists(db: DbOrTx, organizationUid: string, partyUid: string): Promise<boolean> {
  const [row] = await db
    .select({ uid: parties.uid })
    .from(parties)
    .where(and(eq(parties.organizationUid, organizationUid), eq(parties.uid, partyUid)));
  return row !== undefined;
}
