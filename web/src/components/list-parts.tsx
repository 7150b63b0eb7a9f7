import type { ReactNode } from 'react';
import { ariaSort, labelOf } from '../list-query.ts';
import type { Resource } from '../use-resource.ts';
import { Empty, Loading, Problem } from './states.tsx';
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
  meta,
  noun,
  hrefOf,
}: {
  /** A list answer's `_meta`. */
  meta: { page: number; total_pages: number; total_items: number };
  noun: string;
  hrefOf: (page: number) => string;
}) {
  const { page, total_pages: totalPages, total_items: totalItems } = meta;
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

/** An `<option>` per value, named as the lists name it (`in_review` → "In review"). */
export function LabelledOptions({ values }: { values: readonly string[] }) {
  return (
    <>
      {values.map((value) => (
        <option key={value} value={value}>
          {labelOf(value)}
        </option>
      ))}
    </>
  );
}

/** A filter form's buttons: apply, and a link back to the whole list once something is filtered. */
export function FilterActions({ filtered, clearTo }: { filtered: boolean; clearTo: string }) {
  return (
    <div className="filter-actions">
      <button type="submit" className="button button-primary">
        Apply filters
      </button>
      {filtered && (
        <Link to={clearTo} className="link-button">
          Clear filters
        </Link>
      )}
    </div>
  );
}

/**
 * A list's loading, error and empty states (each list page shows its own table once there are
 * items): `noun` names what is listed ("invoices"), `emptyTitle` what an empty page says.
 */
export function ListStates({
  list,
  noun,
  emptyTitle,
  filtered,
  clearTo,
  onRetry,
}: {
  list: Resource<{ items: readonly unknown[] }>;
  noun: string;
  emptyTitle: string;
  filtered: boolean;
  clearTo: string;
  onRetry: () => void;
}) {
  if (list.status === 'loading') return <Loading label={`Loading ${noun}…`} />;
  if (list.status === 'error') {
    return <Problem title={`The ${noun} could not be loaded`} message={list.message} onRetry={onRetry} />;
  }
  if (list.data.items.length > 0) return null;
  return (
    <Empty title={emptyTitle}>
      {filtered && (
        <p>
          <Link to={clearTo}>Clear the filters</Link>
        </p>
      )}
    </Empty>
  );
}
