import { badParameter } from './errors.ts';

/**
 * The largest `page` any list accepts. With at most 100 items a page the deepest OFFSET is 9,999,900:
 * a safe integer, and a scan PostgreSQL finishes within the statement timeout on the lists' indexes.
 * Past it, narrow the list with its filters or sort the other way (docs/errors.md).
 */
export const MAX_PAGE = 100_000;

export interface PageRequest {
  page: number;
  perPage: number;
}

export interface PageMeta {
  page: number;
  per_page: number;
  total_pages: number;
  total_items: number;
}

export function pageRequest(
  query: { page?: number | undefined; per_page?: number | undefined },
  defaultPerPage: number,
): PageRequest {
  const page = query.page ?? 1;
  // The route schemas bound `page` already (applyQueryRules); this keeps an OFFSET sane for callers
  // that build a page request themselves.
  if (!Number.isSafeInteger(page) || page < 1 || page > MAX_PAGE) {
    throw badParameter('page', `must be an integer from 1 to ${MAX_PAGE}`);
  }
  return { page, perPage: query.per_page ?? defaultPerPage };
}

export function offsetOf(page: PageRequest): number {
  return (page.page - 1) * page.perPage;
}

export function pageMeta(page: PageRequest, totalItems: number): PageMeta {
  return {
    page: page.page,
    per_page: page.perPage,
    total_pages: Math.ceil(totalItems / page.perPage),
    total_items: totalItems,
  };
}

/** `_links` of interface §2.1: the same request with another `page`; null where there is no such page. */
export function pageLinks(
  baseUrl: string,
  requestUrl: string,
  meta: PageMeta,
): { self: string; next: string | null; prev: string | null } {
  const url = new URL(requestUrl, baseUrl);
  const at = (page: number) => {
    const copy = new URL(url);
    copy.searchParams.set('page', String(page));
    copy.searchParams.set('per_page', String(meta.per_page));
    return copy.toString();
  };
  return {
    self: at(meta.page),
    next: meta.page < meta.total_pages ? at(meta.page + 1) : null,
    prev: meta.page > 1 ? at(Math.min(meta.page - 1, Math.max(meta.total_pages, 1))) : null,
  };
}

/**
 * A `sort` parameter of the form `[+|-]field` (interface 4.3). A `+` in a query string arrives as a
 * space, so a leading space means ascending too; the field itself is validated by the route's schema.
 */
export function parseSort<F extends string>(
  sort: string | undefined,
  fallback: string,
): { field: F; descending: boolean } {
  const raw = (sort ?? fallback).replace(/^ /, '+');
  return { field: raw.replace(/^[+-]/, '') as F, descending: raw.startsWith('-') };
}
