import { pageOf } from './list-query.ts';

/**
 * The Collections pages' pure rules (docs/console.md#collections): which emails each tab lists, the
 * address-bar state, recipients typed as text, the send time typed in the person's time zone, what a
 * status allows, and the document the sandboxed preview renders.
 */

export type EmailStatus = 'draft' | 'sending' | 'sent' | 'failed' | 'canceled';

/** What the preview and the lists need of an email (the API's `EmailDraft`). */
export interface EmailLike {
  status: EmailStatus;
  planned_send_at: string | null;
  body_html: string;
  body_text: string;
}

export const COLLECTION_TABS = ['drafts', 'scheduled', 'sent', 'canceled'] as const;
export type CollectionTab = (typeof COLLECTION_TABS)[number];

export const TAB_LABELS: Record<CollectionTab, string> = {
  drafts: 'Drafts',
  scheduled: 'Scheduled',
  sent: 'Sent',
  canceled: 'Canceled',
};

/** One line under the tabs: what the tab holds. */
export const TAB_NOTES: Record<CollectionTab, string> = {
  drafts: 'Emails not scheduled yet, and emails that failed to send. Open one to edit, schedule or send it.',
  scheduled: 'Drafts waiting for their send time, the next to go first.',
  sent: 'Emails handed to the mail server (or the outbox), and those being sent now.',
  canceled: 'Emails canceled before they went out.',
};

/**
 * Each tab is one `GET /api/email/drafts` query. Every email is in exactly one tab: `scheduled=true` is
 * a draft with a time, so Drafts (`draft` and `failed` without that) and Scheduled never overlap.
 */
export function tabQuery(tab: CollectionTab): {
  status?: string;
  scheduled?: boolean;
  sort: 'planned_send_at' | '-updated_at';
} {
  switch (tab) {
    case 'drafts':
      return { status: 'draft,failed', scheduled: false, sort: '-updated_at' };
    case 'scheduled':
      return { scheduled: true, sort: 'planned_send_at' };
    case 'sent':
      return { status: 'sending,sent', sort: '-updated_at' };
    case 'canceled':
      return { status: 'canceled', sort: '-updated_at' };
  }
}

/** The tab an email is listed in (the link back from its page). */
export function tabOf(email: Pick<EmailLike, 'status' | 'planned_send_at'>): CollectionTab {
  if (email.status === 'draft') return email.planned_send_at ? 'scheduled' : 'drafts';
  if (email.status === 'failed') return 'drafts';
  if (email.status === 'canceled') return 'canceled';
  return 'sent';
}

/** `Scheduled` for a draft with a time; otherwise the status as a word. */
export function statusLabel(email: Pick<EmailLike, 'status' | 'planned_send_at'>): string {
  if (email.status === 'draft' && email.planned_send_at) return 'Scheduled';
  return email.status.charAt(0).toUpperCase() + email.status.slice(1);
}

export interface CollectionFilters {
  q: string;
  page: number;
}

export const COLLECTION_DEFAULTS: CollectionFilters = { q: '', page: 1 };

export function readCollectionFilters(search: URLSearchParams): CollectionFilters {
  return { q: (search.get('q') ?? '').slice(0, 200), page: pageOf(search.get('page')) };
}

/** What a status allows (docs/email-sending.md's table): sending, sent and canceled are final here. */
export function allowedActions(email: Pick<EmailLike, 'status' | 'planned_send_at'>) {
  const editable = email.status === 'draft' || email.status === 'failed';
  return {
    edit: editable,
    schedule: editable,
    unschedule: email.status === 'draft' && email.planned_send_at !== null,
    sendNow: editable,
    cancel: editable,
  };
}

/**
 * Whether the worker is about to act on it (or is acting), so the page should read it again soon: an
 * attempt under way, or a draft whose time has come.
 */
export function isInFlight(email: Pick<EmailLike, 'status' | 'planned_send_at'>, now = Date.now()): boolean {
  if (email.status === 'sending') return true;
  return (
    email.status === 'draft' && email.planned_send_at !== null && Date.parse(email.planned_send_at) <= now
  );
}

// ajv-formats' `email` format, which the API validates addresses with.
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
export const MAX_RECIPIENTS = 100;

/**
 * Recipients typed as text: separated by commas, semicolons or line breaks. Answers the addresses and
 * the problem, if any, in words.
 */
export function parseAddresses(text: string): { addresses: string[]; problem?: string } {
  const addresses = text
    .split(/[,;\n\r]+/)
    .map((part) => part.trim())
    .filter(Boolean);
  const invalid = addresses.filter((a) => a.length > 254 || !EMAIL.test(a));
  if (invalid.length > 0) {
    const list = invalid.slice(0, 3).join(', ');
    return {
      addresses,
      problem: `${invalid.length === 1 ? 'Not an email address' : 'Not email addresses'}: ${list}${invalid.length > 3 ? ', …' : ''}`,
    };
  }
  if (addresses.length > MAX_RECIPIENTS) {
    return { addresses, problem: `At most ${MAX_RECIPIENTS} addresses.` };
  }
  return { addresses };
}

export const addressesText = (addresses: readonly string[]) => addresses.join(', ');

/** The person's time zone, as the browser names it (`Europe/Berlin`). */
export function timeZoneName(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/;
const pad = (n: number) => String(n).padStart(2, '0');

/** The wall-clock fields of `instant` in `timeZone` (the browser's when left out). */
function wallClock(instant: number, timeZone?: string) {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
  }).formatToParts(new Date(instant));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return { y: get('year'), m: get('month'), d: get('day'), h: get('hour'), min: get('minute') };
}

/** An instant (ISO 8601) as a `datetime-local` value in the person's time zone: `2026-11-27T09:00`. */
export function toLocalInput(iso: string, timeZone?: string): string {
  const c = wallClock(Date.parse(iso), timeZone);
  return `${c.y}-${pad(c.m)}-${pad(c.d)}T${pad(c.h)}:${pad(c.min)}`;
}

/**
 * A `datetime-local` value, read as a time in the person's time zone, as the UTC instant the API
 * stores (`planned_send_at`); undefined when it is not a full date and time.
 */
export function fromLocalInput(value: string, timeZone?: string): string | undefined {
  const match = LOCAL.exec(value);
  if (!match) return undefined;
  const [y, m, d, h, min] = match.slice(1).map(Number) as [number, number, number, number, number];
  if (m < 1 || m > 12 || d < 1 || d > 31 || h > 23 || min > 59) return undefined;
  const wanted = Date.UTC(y, m - 1, d, h, min);
  // Start from the wall clock read as UTC and move by the zone's offset there (twice, for a time
  // near a change of offset).
  let instant = wanted;
  for (let i = 0; i < 2; i++) {
    const c = wallClock(instant, timeZone);
    instant += wanted - Date.UTC(c.y, c.m - 1, c.d, c.h, c.min);
  }
  return new Date(instant).toISOString();
}

/** Tomorrow at `hour`:00 in the person's time zone, as a `datetime-local` value (the field's suggestion). */
export function tomorrowAt(hour: number, now = Date.now(), timeZone?: string): string {
  const today = wallClock(now, timeZone);
  const next = new Date(Date.UTC(today.y, today.m - 1, today.d + 1));
  return `${next.getUTCFullYear()}-${pad(next.getUTCMonth() + 1)}-${pad(next.getUTCDate())}T${pad(hour)}:00`;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/**
 * What the preview's `<meta>` adds to the console's own policy, which the preview inherits anyway
 * (a `srcdoc` document keeps its parent's Content-Security-Policy): not even a same-origin request.
 * Images only as `data:` URLs.
 */
export const PREVIEW_POLICY = "default-src 'none'; img-src data:";

/**
 * The document the sandboxed `<iframe srcdoc>` renders: the HTML version as it was saved, or, when
 * there is none, the text version escaped, its line breaks and runs of spaces kept. Never trusted: the
 * frame runs no script, submits no form, opens nothing and reaches nothing (docs/console.md).
 */
export function previewDocument(email: Pick<EmailLike, 'body_html' | 'body_text'>): string {
  // The first <base target> counts: every link would open a new window, which the sandbox refuses, so
  // a click on a link goes nowhere (not even the frame itself).
  const meta = `<meta http-equiv="Content-Security-Policy" content="${PREVIEW_POLICY}"><base target="_blank">`;
  if (email.body_html.trim()) {
    // After a doctype (so the document stays in standards mode), else first: a policy in a <meta>
    // counts only from where it is parsed on.
    const doctype = /^\s*<!doctype[^>]*>/i.exec(email.body_html);
    return doctype
      ? `${doctype[0]}${meta}${email.body_html.slice(doctype[0].length)}`
      : `${meta}${email.body_html}`;
  }
  const text = escapeHtml(email.body_text)
    .replace(/\r\n?/g, '\n')
    .replace(/ {2}/g, ' &nbsp;')
    .replace(/\t/g, ' &nbsp; &nbsp;')
    .replace(/\n/g, '<br>\n');
  return `<!doctype html><html><head><meta charset="utf-8">${meta}</head><body>${text}</body></html>`;
}

/**
 * Bumped after any change to an email on this page, so the lists (cached for 30 s by `useResource`)
 * are read again rather than shown as they were.
 */
let generation = 0;
export const emailsGeneration = () => generation;
export function emailsChanged(): void {
  generation += 1;
}
