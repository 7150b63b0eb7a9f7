import { deepFreeze } from '../../platform/deep-freeze.ts';
import type { ChannelListener, Notifications } from '../../platform/db/notifications.ts';
import type { InvoiceView } from './invoice-view.ts';

/**
 * The channel the triggers of migration 0034 notify, with the organization's uid as payload, when
 * anything an invoice's view reads changes in that organization ('*' when it may be any: a user's
 * name, a truncate).
 */
export const INVOICE_CHANGES_CHANNEL = 'remit_invoices';

/** What `GET /api/invoices/{uid}` read, with what the access rule checks. */
export interface HeldInvoice {
  view: InvoiceView;
  organizationUid: string;
  responsible: number | null;
  assigneeUids: string[];
}

interface Entry {
  held: HeldInvoice;
  /** The UTC day its overdue days and age were computed for. */
  day: string;
  validUntil: number;
}

/**
 * The invoices `GET /api/invoices/{uid}` has just read, so the next reads of one skip the database
 * (docs/performance.md#invoice-view-cache). The rules of the authentication cache
 * (`key-auth-cache.ts`), per organization:
 *
 * - Every change to an invoice, its lines, comments, assignees, integrations, parties or their
 *   contacts NOTIFYs `remit_invoices` with its organization (migration 0034) and forgets that
 *   organization's invoices; a change to a user's name, email or avatar (comment authors) forgets all.
 *   The connection that commits hears it before its COMMIT returns, so in this process a change holds
 *   from the next request; other processes hear it within milliseconds.
 * - A read that started before any notification and ends after it is not stored (the generation moved).
 * - While notifications are not being received, nothing is served or stored.
 * - An entry lasts at most `ttlMs`, and only for the UTC day its overdue days were computed for.
 * - The cache holds invoices, not answers: a member's access to a held view is read from the database
 *   on every request (readInvoice), never from the held copy another server may have changed.
 */
export class InvoiceViewCache implements ChannelListener {
  private generation = 0;
  private listening = false;
  private readonly byOrganization = new Map<string, Map<string, Entry>>();
  /** Which organization holds an invoice uid, so a lookup by uid alone finds its entry (one per entry). */
  private readonly organizationOf = new Map<string, string>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 20_000,
    private readonly now: () => number = Date.now,
  ) {}

  get(uid: string): HeldInvoice | undefined {
    if (!this.listening) return undefined;
    const organizationUid = this.organizationOf.get(uid);
    if (organizationUid === undefined) return undefined;
    const entry = this.byOrganization.get(organizationUid)?.get(uid);
    if (!entry) return undefined;
    const now = this.now();
    if (now < entry.validUntil && entry.day === utcDay(now)) return entry.held;
    this.drop(organizationUid, uid);
    return undefined;
  }

  /** Taken before the database read whose result `set` may store, with the day the view will use. */
  mark(): { generation: number; day: string } {
    return { generation: this.generation, day: utcDay(this.now()) };
  }

  set(uid: string, readAt: { generation: number; day: string }, held: HeldInvoice): void {
    const now = this.now();
    if (!this.listening || readAt.generation !== this.generation || readAt.day !== utcDay(now)) return;
    if (this.organizationOf.size >= this.maxEntries) this.clear();
    let entries = this.byOrganization.get(held.organizationUid);
    if (!entries) this.byOrganization.set(held.organizationUid, (entries = new Map()));
    // Frozen: every request for the invoice shares it.
    entries.set(uid, { held: deepFreeze(held), day: readAt.day, validUntil: now + this.ttlMs });
    this.organizationOf.set(uid, held.organizationUid);
  }

  notify(payload: string): void {
    this.generation += 1;
    if (payload === '*' || payload === '') {
      this.clear();
      return;
    }
    const entries = this.byOrganization.get(payload);
    if (!entries) return;
    for (const uid of entries.keys()) this.organizationOf.delete(uid);
    this.byOrganization.delete(payload);
  }

  live(isLive: boolean): void {
    this.notify('*');
    this.listening = isLive;
  }

  get size(): number {
    return this.organizationOf.size;
  }

  get isLive(): boolean {
    return this.listening;
  }

  private drop(organizationUid: string, uid: string): void {
    this.byOrganization.get(organizationUid)?.delete(uid);
    this.organizationOf.delete(uid);
  }

  private clear(): void {
    this.byOrganization.clear();
    this.organizationOf.clear();
  }
}

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The cache of one server, listening for changes; none when `ttlS` is 0. */
export function startInvoiceViewCache(
  notifications: Notifications,
  ttlS: number,
): { cache: InvoiceViewCache; stop: () => void } | null {
  if (ttlS <= 0) return null;
  const cache = new InvoiceViewCache(ttlS * 1000);
  const stop = notifications.listen(INVOICE_CHANGES_CHANNEL, cache);
  return { cache, stop };
}
