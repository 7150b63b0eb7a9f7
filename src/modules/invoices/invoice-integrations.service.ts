// What the billing module writes to invoices: the invoice's record at the partner and the revision a
// re-sent sync applied, and the view its events carry. Apart from invoices.service.ts, which imports
// billing.service.ts: billing imports this file instead, so the two modules form no import cycle. It
// imports only the invoices repository and the view.
import type { DbOrTx } from '../../platform/db/client.ts';
import { loadInvoiceViews, type InvoiceView } from './invoice-view.ts';
import * as repo from './invoices.repository.ts';

export type { InvoiceRow } from './invoices.repository.ts';

/** Creates or replaces the invoice's record at an outside system (`integrations[]` of the invoice). */
export async function recordInvoiceIntegration(
  tx: DbOrTx,
  values: Parameters<typeof repo.upsertIntegration>[1],
): Promise<void> {
  await repo.upsertIntegration(tx, values);
}

/** Sets only the invoice's revision (`updated_at` and every other column stay as they are). */
export async function setInvoiceRevision(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  revision: number,
): Promise<void> {
  await repo.setRevision(tx, organizationUid, invoiceUid, revision);
}

/** The invoice as `GET /api/invoices/{uid}` answers it, read in `tx`; undefined when it is gone. */
export async function findInvoiceView(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<InvoiceView | undefined> {
  const row = await repo.findInvoiceOfOrganization(tx, organizationUid, invoiceUid);
  if (!row) return undefined;
  const [view] = await loadInvoiceViews(tx, organizationUid, [row], { includeComments: true });
  return view;
}
