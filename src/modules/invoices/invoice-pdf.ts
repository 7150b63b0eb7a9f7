import crypto from 'node:crypto';
import type PDFKit from 'pdfkit';
import { formatLongDate, formatMoney } from '../email/email-tokens.ts';

/**
 * The PDF of a receivable invoice (docs/invoices.md#invoice-documents): pure — what it shows comes in
 * as an `InvoiceDocument`, the bytes go out. Made with pdfkit and the PDF standard fonts (Helvetica),
 * which every reader has, so no font file ships with Remit; they cover Western European text
 * (WinAnsi), and a character outside it prints as a substitute.
 *
 * Rendering is synchronous CPU work (≈ 0.25 ms a line): the service runs it in a worker thread
 * (invoice-pdf-rendering.ts), once per content version (invoice-documents.service.ts keeps the bytes).
 */

export interface InvoiceDocumentLine {
  kind: string;
  description: string;
  sku: string | null;
  quantity: number;
  unit_price_cents: number;
  line_total_cents: number;
}

/** Everything the PDF shows, and nothing else: its SHA-256 is the PDF's content version. */
export interface InvoiceDocument {
  issuer: { name: string; address: string; tax_id: string | null; payment_instructions: string };
  client: { name: string; address: string; tax_id: string | null; email: string | null } | null;
  invoice_number: string;
  status: string;
  currency: string;
  issue_date: string | null;
  due_date: string | null;
  paid_date: string | null;
  lines: InvoiceDocumentLine[];
  subtotal_cents: number;
  discount_cents: number;
  tax_cents: number;
  total_cents: number;
  credit_notes_cents: number;
  amount_due_cents: number;
  amount_paid_cents: number;
  amount_remaining_cents: number;
  memo: string;
  footer: string;
}

/** Bumped whenever the layout changes, so every cached PDF is rendered again in the new one. */
export const LAYOUT_VERSION = 1;

/** The document's content version: SHA-256 (hex) of the layout version and every value shown. */
export function contentHash(document: InvoiceDocument): string {
  return crypto
    .createHash('sha256')
    .update(`${LAYOUT_VERSION}\n${JSON.stringify(document)}`)
    .digest('hex');
}

/** The money and date texts the PDF and the hosted page share. */
export const money = (cents: number, currency: string) => formatMoney(cents, currency);
export const day = (iso: string | null) => (iso ? formatLongDate(iso) : '—');

/** A line's signed amount: discount lines reduce the total, and show so. */
export const signedLineTotal = (line: InvoiceDocumentLine) =>
  line.kind === 'DISCOUNT' ? -line.line_total_cents : line.line_total_cents;

/** The totals block, in order, each `[label, cents]`; the zero optional ones are left out. */
export function totalRows(d: InvoiceDocument): [string, number][] {
  const rows: [string, number][] = [['Subtotal', d.subtotal_cents]];
  if (d.discount_cents !== 0) rows.push(['Discount', -d.discount_cents]);
  rows.push(['Tax', d.tax_cents], ['Total', d.total_cents]);
  if (d.credit_notes_cents !== 0) {
    rows.push(['Credit notes', -d.credit_notes_cents], ['Amount due', d.amount_due_cents]);
  }
  rows.push(['Amount paid', d.amount_paid_cents], ['Amount remaining', d.amount_remaining_cents]);
  return rows;
}

type Doc = PDFKit.PDFDocument;
const loadPdfkit = () => import('pdfkit');
let pdfkit: ReturnType<typeof loadPdfkit> | undefined;

const GREY = '#555555';
const RULE = '#cccccc';
const MARGIN = 50;

/** Renders the PDF. pdfkit loads on first use (it reads its font metrics from its own package). */
export async function renderInvoicePdf(d: InvoiceDocument, now: Date = new Date()): Promise<Buffer> {
  pdfkit ??= loadPdfkit();
  const { default: PDFDocument } = await pdfkit;
  const doc = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    info: {
      Title: `Invoice ${d.invoice_number}`,
      Author: d.issuer.name,
      Subject: `Invoice ${d.invoice_number} from ${d.issuer.name}`,
      CreationDate: now,
    },
  });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  layout(doc, d);
  doc.end();
  return done;
}

function layout(doc: Doc, d: InvoiceDocument): void {
  const left = MARGIN;
  const width = doc.page.width - 2 * MARGIN;
  const right = left + width;

  // Header: the issuer on the left, the document's name and number on the right.
  doc
    .font('Helvetica-Bold')
    .fontSize(16)
    .fillColor('black')
    .text(d.issuer.name, left, MARGIN, {
      width: width * 0.6,
    });
  doc.font('Helvetica').fontSize(9).fillColor(GREY);
  if (d.issuer.address) doc.text(d.issuer.address, { width: width * 0.6 });
  if (d.issuer.tax_id) doc.text(`Tax ID: ${d.issuer.tax_id}`, { width: width * 0.6 });
  const issuerBottom = doc.y;
  doc.font('Helvetica-Bold').fontSize(20).fillColor('black');
  doc.text('INVOICE', left + width * 0.6, MARGIN, { width: width * 0.4, align: 'right' });
  doc.font('Helvetica').fontSize(10);
  const meta: [string, string][] = [
    ['Invoice number', d.invoice_number],
    ['Status', d.status],
    ['Issue date', day(d.issue_date)],
    ['Due date', day(d.due_date)],
  ];
  if (d.paid_date) meta.push(['Paid on', day(d.paid_date)]);
  for (const [label, value] of meta) {
    doc.text(`${label}: ${value}`, left + width * 0.4, undefined, { width: width * 0.6, align: 'right' });
  }
  let y = Math.max(issuerBottom, doc.y) + 20;

  // Bill to.
  doc.font('Helvetica-Bold').fontSize(10).fillColor('black').text('Bill to', left, y);
  doc.font('Helvetica').fontSize(10);
  if (d.client) {
    doc.text(d.client.name, { width: width * 0.6 });
    doc.fillColor(GREY).fontSize(9);
    if (d.client.address) doc.text(d.client.address, { width: width * 0.6 });
    if (d.client.tax_id) doc.text(`Tax ID: ${d.client.tax_id}`, { width: width * 0.6 });
    if (d.client.email) doc.text(d.client.email, { width: width * 0.6 });
  } else {
    doc.fillColor(GREY).text('—');
  }
  y = doc.y + 20;

  // Line items.
  const cols = {
    description: { x: left, w: width * 0.46 },
    quantity: { x: left + width * 0.46, w: width * 0.12 },
    unit: { x: left + width * 0.58, w: width * 0.2 },
    amount: { x: left + width * 0.78, w: width * 0.22 },
  };
  const bottom = () => doc.page.height - MARGIN;
  const tableHeader = () => {
    doc.font('Helvetica-Bold').fontSize(9).fillColor('black');
    doc.text('Description', cols.description.x, y, { width: cols.description.w });
    doc.text('Qty', cols.quantity.x, y, { width: cols.quantity.w, align: 'right' });
    doc.text('Unit price', cols.unit.x, y, { width: cols.unit.w, align: 'right' });
    doc.text('Amount', cols.amount.x, y, { width: cols.amount.w, align: 'right' });
    y += 14;
    doc.moveTo(left, y).lineTo(right, y).strokeColor(RULE).stroke();
    y += 6;
  };
  tableHeader();
  doc.font('Helvetica').fontSize(9);
  for (const line of d.lines) {
    const description = line.sku ? `${line.description} (${line.sku})` : line.description;
    const height = Math.max(12, doc.heightOfString(description, { width: cols.description.w - 8 })) + 6;
    if (y + height > bottom()) {
      doc.addPage();
      y = MARGIN;
      tableHeader();
      doc.font('Helvetica').fontSize(9);
    }
    doc.fillColor('black');
    doc.text(description, cols.description.x, y, { width: cols.description.w - 8 });
    doc.text(String(line.quantity), cols.quantity.x, y, { width: cols.quantity.w, align: 'right' });
    const unit = line.kind === 'DISCOUNT' ? -line.unit_price_cents : line.unit_price_cents;
    doc.text(money(unit, d.currency), cols.unit.x, y, { width: cols.unit.w, align: 'right' });
    doc.text(money(signedLineTotal(line), d.currency), cols.amount.x, y, {
      width: cols.amount.w,
      align: 'right',
    });
    y += height;
  }
  if (d.lines.length === 0) {
    doc.fillColor(GREY).text('No line items', cols.description.x, y);
    y += 18;
  }
  doc.moveTo(left, y).lineTo(right, y).strokeColor(RULE).stroke();
  y += 10;

  // Totals, right-aligned under the amounts.
  const rows = totalRows(d);
  if (y + rows.length * 15 > bottom()) {
    doc.addPage();
    y = MARGIN;
  }
  for (const [label, cents] of rows) {
    const strong = label === 'Total' || label === 'Amount remaining';
    doc
      .font(strong ? 'Helvetica-Bold' : 'Helvetica')
      .fontSize(10)
      .fillColor('black');
    doc.text(label, cols.unit.x - width * 0.1, y, { width: cols.unit.w + width * 0.1, align: 'right' });
    doc.text(money(cents, d.currency), cols.amount.x, y, { width: cols.amount.w, align: 'right' });
    y += 15;
  }
  y += 15;

  // Payment instructions, memo and footer flow on (pdfkit adds pages for long text).
  const block = (title: string, text: string) => {
    if (!text) return;
    if (y + 40 > bottom()) {
      doc.addPage();
      y = MARGIN;
    }
    if (title) doc.font('Helvetica-Bold').fontSize(10).fillColor('black').text(title, left, y, { width });
    doc.font('Helvetica').fontSize(9).fillColor(GREY);
    if (title) doc.text(text, { width });
    else doc.text(text, left, y, { width });
    y = doc.y + 14;
  };
  block('Payment instructions', d.issuer.payment_instructions);
  block('Notes', d.memo);
  block('', d.footer);
}
