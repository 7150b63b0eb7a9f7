import type { Db } from '../../platform/db/client.ts';
import { containsPattern } from '../../platform/db/text-search.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { badParameter } from '../../platform/http/errors.ts';
import { formatMoney } from '../email/email-tokens.ts';
import { interleave, shareOf } from './round-robin.ts';
import { visibleInOrganization } from '../invoices/invoice-access.ts';
import * as repo from './search.repository.ts';
import {
  SEARCH_TYPES,
  type ContextSearchQueryT,
  type SearchItemT,
  type SearchQueryT,
  type SearchType,
} from './search.schemas.ts';
import { withTextSearchIndexes } from '../../platform/db/session-role.ts';

export function parseTypes(value: string | undefined): SearchType[] {
  if (value === undefined || value.trim() === '') return [...SEARCH_TYPES];
  const types: SearchType[] = [];
  for (const raw of value.split(',')) {
    const type = raw.trim();
    if (!(SEARCH_TYPES as readonly string[]).includes(type))
      throw badParameter('types', `Unknown type "${type}"; types are ${SEARCH_TYPES.join(', ')}`);
    if (!types.includes(type as SearchType)) types.push(type as SearchType);
  }
  return types;
}

/** `pattern`: the LIKE pattern of `q` (null in suggest mode); `q`: the trimmed text, for full-text matches. */
type Finder = (
  db: Db,
  ctx: RequestContext,
  pattern: string | null,
  limit: number,
  q: string | null,
) => Promise<SearchItemT[]>;

const FINDERS: Record<SearchType, Finder> = {
  invoice: async (db, ctx, pattern, limit) =>
    (await repo.findInvoices(db, ctx.organizationUid, pattern, limit, visibleInOrganization(db, ctx))).map(
      (r) => {
        const amount = formatMoney(r.totalCents, r.currency);
        return {
          entity_uid: r.uid,
          entity_type: 'invoice',
          label: r.invoiceNumber,
          subtitle: r.clientName ? `${r.clientName} · ${amount}` : amount,
        };
      },
    ),
  customer: async (db, ctx, pattern, limit) =>
    (await repo.findCustomers(db, ctx.organizationUid, pattern, limit)).map((r) => ({
      entity_uid: r.uid,
      entity_type: 'customer',
      label: r.name,
      subtitle: r.address || null,
    })),
  task: async (db, ctx, pattern, limit) =>
    (await repo.findTasks(db, ctx.organizationUid, pattern, limit)).map((r) => ({
      entity_uid: r.uid,
      entity_type: 'task',
      label: r.title,
      subtitle: `${r.status} · ${r.dueDate ? `due ${r.dueDate}` : 'no due date'}`,
    })),
  conversation: async (db, ctx, pattern, limit) =>
    (await repo.findConversations(db, ctx.organizationUid, pattern, limit)).map((r) => ({
      entity_uid: r.uid,
      entity_type: 'conversation',
      label: r.subject,
      subtitle: `${r.channel} · ${r.status}`,
    })),
  document: async (db, ctx, pattern, limit, q) => {
    const [named, texts] = await Promise.all([
      repo.findDocuments(db, ctx.organizationUid, pattern, limit),
      q === null ? [] : repo.findDocumentsByText(db, ctx.organizationUid, q, limit),
    ]);
    return withTextMatches(named, texts, limit).map((r) => ({
      entity_uid: r.uid,
      entity_type: 'document',
      label: r.documentName || r.filename,
      subtitle: r.filename,
    }));
  },
  knowledge: async (db, ctx, pattern, limit, q) => {
    const [named, texts] = await Promise.all([
      repo.findKnowledge(db, ctx.organizationUid, pattern, limit),
      q === null ? [] : repo.findKnowledgeByText(db, ctx.organizationUid, q, limit),
    ]);
    return withTextMatches(named, texts, limit).map((r) => ({
      entity_uid: r.uid,
      entity_type: 'knowledge',
      label: r.filename,
      subtitle: r.contentType,
    }));
  },
};

/**
 * Documents and knowledge also match on their extracted text (full text, docs/search.md#matching-rule-1):
 * the matches by name come first, as rule 1 and 2 order them, then those found only in the text, best
 * first, up to the type's share.
 */
function withTextMatches<T extends { uid: string }>(named: T[], texts: T[], limit: number): T[] {
  const seen = new Set(named.map((r) => r.uid));
  return [...named, ...texts.filter((r) => !seen.has(r.uid))].slice(0, limit);
}

/**
 * `GET /api/search` (interface 4.4): one query per requested type, each limited to the type's share,
 * run side by side (on PostgreSQL each takes its own pooled connection), then dealt round-robin.
 */
export async function search(db: Db, ctx: RequestContext, query: SearchQueryT): Promise<SearchItemT[]> {
  const mode = query.mode ?? 'search';
  const types = parseTypes(query.types);
  const limit = query.limit ?? 12;
  let pattern: string | null = null;
  let q: string | null = null;
  if (mode === 'search') {
    q = (query.q ?? '').trim();
    if (q.length < 2) throw badParameter('q', 'q needs at least 2 characters in search mode');
    pattern = containsPattern(q);
  }
  const share = shareOf(limit, types.length);
  const lists = await withTextSearchIndexes(pattern !== null, () =>
    Promise.all(types.map((type) => FINDERS[type](db, ctx, pattern, share, q))),
  );
  return interleave(lists, limit);
}

/** `GET /api/work-tasks/context-search` (interface 4.5): what a task's `context_entities` can link. */
export async function contextSearch(db: Db, ctx: RequestContext, query: ContextSearchQueryT) {
  const q = query.q.trim();
  if (q.length < 2) throw badParameter('q', 'q needs at least 2 characters');
  const pattern = containsPattern(q);
  const limit = query.per_page ?? 10;
  const wants = (type: 'invoice' | 'party' | 'message') => !query.entity_type || query.entity_type === type;
  const org = ctx.organizationUid;
  const [invoices, parties, messages] = await withTextSearchIndexes(true, () =>
    Promise.all([
      wants('invoice')
        ? repo.findLinkableInvoices(db, org, pattern, limit, visibleInOrganization(db, ctx))
        : Promise.resolve([]),
      wants('party') ? repo.findLinkableParties(db, org, pattern, limit) : Promise.resolve([]),
      wants('message') ? repo.findLinkableMessages(db, org, pattern, limit) : Promise.resolve([]),
    ]),
  );
  return {
    invoices: invoices.map((i) => ({
      uid: i.uid,
      invoice_number: i.invoiceNumber,
      counterparty_name: i.invoiceType === 'ACCOUNTS_PAYABLE' ? i.vendorName : i.clientName,
      amount_due_cents: i.amountDueCents,
      currency: i.currency,
    })),
    parties: parties.map((p) => ({ uid: p.uid, name: p.name })),
    messages: messages.map((m) => ({ uid: m.uid, subject: m.subject, from_email: m.fromEmail })),
  };
}
