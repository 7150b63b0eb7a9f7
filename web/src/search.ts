/** Pure rules of the search palette (components/search-palette.tsx), over `GET /api/search` (docs/search.md). */

export interface SearchResult {
  entity_uid: string;
  entity_type: string;
  label: string;
  subtitle?: string | null;
}

/**
 * The kinds searched: those the console has a page for. Customers are left out (no page yet; an invoice
 * is found by its customer's name anyway), as are conversations and documents.
 */
export const SEARCH_TYPES = ['invoice', 'task', 'knowledge'] as const;

/** How long typing must pause before a query is sent. */
export const SEARCH_DEBOUNCE_MS = 200;

/** What `q` the API would take (2 to 200 characters after trimming), or undefined: show recent items. */
export function searchQuery(text: string): string | undefined {
  const q = text.trim();
  return q.length >= 2 ? q.slice(0, 200) : undefined;
}

/**
 * Where a result opens: an invoice's or a task's page, the inbox for an approval still pending (the
 * tasks the inbox lists), the Knowledge page for a document.
 */
export function resultPath(result: SearchResult, pendingApprovals: ReadonlySet<string>): string | undefined {
  const uid = encodeURIComponent(result.entity_uid);
  switch (result.entity_type) {
    case 'invoice':
      return `/app/invoices/${uid}`;
    case 'task':
      return pendingApprovals.has(result.entity_uid) ? `/app/inbox/${uid}` : `/app/tasks/${uid}`;
    case 'knowledge':
      return '/app/knowledge';
    default:
      return undefined;
  }
}

export const TYPE_NAMES: Record<string, string> = {
  invoice: 'Invoice',
  task: 'Task',
  knowledge: 'Knowledge',
};

/** The next active option for an arrow key: wraps around; -1 when there is none. */
export function moveActive(active: number, step: 1 | -1, count: number): number {
  if (count === 0) return -1;
  if (active < 0) return step > 0 ? 0 : count - 1;
  return (active + step + count) % count;
}
