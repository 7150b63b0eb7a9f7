import { and, desc, eq, ilike, ne, or, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../../platform/db/client.ts';
import { conversations, messages } from '../conversations/conversations.tables.ts';
import { documents } from '../documents/documents.tables.ts';
import { invoices } from '../invoices/invoices.tables.ts';
import { knowledgeDocuments } from '../knowledge/knowledge.tables.ts';
import { parties } from '../parties/parties.tables.ts';
import { workTasks } from '../work-tasks/work-tasks.tables.ts';

/** The total as a decimal string; the same expression as the `invoices_total_text_trgm_idx` index. */
const totalText = sql`(((${invoices.totalCents} / 100)::text || '.' || lpad((abs(${invoices.totalCents}) % 100)::text, 2, '0')))`;

/** `pattern` is a LIKE pattern with the user's wildcards escaped, or null in suggest mode (no filter). */
type Pattern = string | null;
const anyOf = (pattern: Pattern, columns: (SQL | AnyPgColumn)[]) =>
  pattern === null ? undefined : or(...columns.map((c) => ilike(c, pattern)));

// Each finder is one query: the organization filter, the match on exactly the fields of interface 4.4
// rule 1, the recency order of rule 2, and the type's share as the limit.

export function findInvoices(db: DbOrTx, organizationUid: string, pattern: Pattern, limit: number) {
  return db
    .select({
      uid: invoices.uid,
      invoiceNumber: invoices.invoiceNumber,
      clientName: invoices.clientName,
      totalCents: invoices.totalCents,
      currency: invoices.currency,
    })
    .from(invoices)
    .where(
      and(
        eq(invoices.organizationUid, organizationUid),
        anyOf(pattern, [invoices.invoiceNumber, invoices.clientName, totalText]),
      ),
    )
    .orderBy(sql`${invoices.issueDate} desc nulls last`, desc(invoices.uid))
    .limit(limit);
}

export function findCustomers(db: DbOrTx, organizationUid: string, pattern: Pattern, limit: number) {
  return db
    .select({ uid: parties.uid, name: parties.name, address: parties.address })
    .from(parties)
    .where(
      and(
        eq(parties.organizationUid, organizationUid),
        eq(parties.role, 'client'),
        anyOf(pattern, [parties.name, parties.address]),
      ),
    )
    .orderBy(desc(parties.updatedAt), desc(parties.uid))
    .limit(limit);
}

export function findTasks(db: DbOrTx, organizationUid: string, pattern: Pattern, limit: number) {
  return db
    .select({
      uid: workTasks.uid,
      title: workTasks.title,
      status: workTasks.status,
      dueDate: workTasks.dueDate,
    })
    .from(workTasks)
    .where(
      and(
        eq(workTasks.organizationUid, organizationUid),
        anyOf(pattern, [workTasks.title, workTasks.description, workTasks.status]),
      ),
    )
    .orderBy(desc(workTasks.createdAt), desc(workTasks.uid))
    .limit(limit);
}

export function findConversations(db: DbOrTx, organizationUid: string, pattern: Pattern, limit: number) {
  return db
    .select({
      uid: conversations.uid,
      subject: conversations.subject,
      channel: conversations.channel,
      status: conversations.status,
    })
    .from(conversations)
    .where(
      and(
        eq(conversations.organizationUid, organizationUid),
        anyOf(pattern, [conversations.subject, conversations.channel, conversations.status]),
      ),
    )
    .orderBy(desc(conversations.createdAt), desc(conversations.uid))
    .limit(limit);
}

export function findDocuments(db: DbOrTx, organizationUid: string, pattern: Pattern, limit: number) {
  return db
    .select({ uid: documents.uid, filename: documents.filename, documentName: documents.documentName })
    .from(documents)
    .where(
      and(
        eq(documents.organizationUid, organizationUid),
        anyOf(pattern, [documents.filename, documents.documentName]),
      ),
    )
    .orderBy(desc(documents.updatedAt), desc(documents.uid))
    .limit(limit);
}

export function findKnowledge(db: DbOrTx, organizationUid: string, pattern: Pattern, limit: number) {
  return db
    .select({
      uid: knowledgeDocuments.uid,
      filename: knowledgeDocuments.filename,
      contentType: knowledgeDocuments.contentType,
    })
    .from(knowledgeDocuments)
    .where(
      and(
        eq(knowledgeDocuments.organizationUid, organizationUid),
        // A presign never confirmed is an upload that may never happen, not a document.
        ne(knowledgeDocuments.status, 'presigned'),
        anyOf(pattern, [knowledgeDocuments.filename]),
      ),
    )
    .orderBy(desc(knowledgeDocuments.createdAt), desc(knowledgeDocuments.uid))
    .limit(limit);
}

// ---- work-task context search (interface 4.5) ----

export function findLinkableInvoices(db: DbOrTx, organizationUid: string, pattern: string, limit: number) {
  return db
    .select({
      uid: invoices.uid,
      invoiceNumber: invoices.invoiceNumber,
      invoiceType: invoices.invoiceType,
      clientName: invoices.clientName,
      vendorName: invoices.vendorName,
      amountDueCents: invoices.amountDueCents,
      currency: invoices.currency,
    })
    .from(invoices)
    .where(
      and(
        eq(invoices.organizationUid, organizationUid),
        or(
          ilike(invoices.invoiceNumber, pattern),
          // The counterparty: the client of a receivable, the vendor of a payable.
          and(eq(invoices.invoiceType, 'ACCOUNTS_RECEIVABLE'), ilike(invoices.clientName, pattern)),
          and(eq(invoices.invoiceType, 'ACCOUNTS_PAYABLE'), ilike(invoices.vendorName, pattern)),
        ),
      ),
    )
    .orderBy(sql`${invoices.issueDate} desc nulls last`, desc(invoices.uid))
    .limit(limit);
}

export function findLinkableParties(db: DbOrTx, organizationUid: string, pattern: string, limit: number) {
  return db
    .select({ uid: parties.uid, name: parties.name })
    .from(parties)
    .where(and(eq(parties.organizationUid, organizationUid), ilike(parties.name, pattern)))
    .orderBy(desc(parties.updatedAt), desc(parties.uid))
    .limit(limit);
}

export function findLinkableMessages(db: DbOrTx, organizationUid: string, pattern: string, limit: number) {
  return db
    .select({ uid: messages.uid, subject: messages.subject, fromEmail: messages.fromEmail })
    .from(messages)
    .where(
      and(
        eq(messages.organizationUid, organizationUid),
        or(ilike(messages.subject, pattern), ilike(messages.fromEmail, pattern)),
      ),
    )
    .orderBy(desc(messages.createdAt), desc(messages.uid))
    .limit(limit);
}
