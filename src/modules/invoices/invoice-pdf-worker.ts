import { renderInvoicePdf, type InvoiceDocument } from './invoice-pdf.ts';

/** The piscina task: renders in a rendering thread, never in the thread that serves requests. */
export default async function render(document: InvoiceDocument): Promise<Uint8Array> {
  return renderInvoicePdf(document);
}
