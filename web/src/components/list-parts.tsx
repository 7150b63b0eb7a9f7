import type { ReactNode } from 'react';
import { ariaSort } from '../list-query.ts';
import { Link } from '../router.tsx';

/**
 * A sortable column header: a button (reachable by keyboard, named by the column) inside a `<th>` that
 * carries `aria-sort`, so a screen reader says how the list is ordered.
 */
export function SortHeader({
  label,
  active,
  descending,
  onSort,
  className,
}: {
  label: string;
  active: boolean;
  descending: boolean;
  onSort: () => void;
  className?: string;
}) {
  return (
    <th scope="col" aria-sort={ariaSort(active, descending)} className={className}>
      <button type="button" className="sort-button" onClick={onSort}>
        {label}
        <span aria-hidden="true" className="sort-mark">
          {active ? (descending ? '↓' : '↑') : '↕'}
        </span>
      </button>
    </th>
  );
}

/** "Page 2 of 7 · 160 invoices", with previous and next as real links (they can be opened in a new tab). */
export function Pager({
  page,
  totalPages,
  totalItems,
  noun,
  hrefOf,
}: {
  page: number;
  totalPages: number;
  totalItems: number;
  noun: string;
  hrefOf: (page: number) => string;
}) {
  return (
    <nav className="pager" aria-label="Pages">
      {page > 1 ? (
        <Link to={hrefOf(page - 1)} rel="prev">
          ← Previous
        </Link>
      ) : (
        <span />
      )}
      <span className="muted">
        Page {page} of {Math.max(totalPages, 1)} · {totalItems} {noun}
      </span>
      {page < totalPages ? (
        <Link to={hrefOf(page + 1)} rel="next">
          Next →
        </Link>
      ) : (
        <span />
      )}
    </nav>
  );
}

/** A wide table that scrolls inside its own box on a phone, not the whole page. */
export function TableBox({ label, children }: { label: string; children: ReactNode }) {
  return (
    // Focusable so a keyboard can scroll it (axe: scrollable-region-focusable).
    <div className="table-box" tabIndex={0} role="region" aria-label={label}>
      {children}
    </div>
  );
}
