import crypto from 'node:crypto';
import { escapeHtml } from '../email/email-html.ts';
import { day, money, signedLineTotal, totalRows, type InvoiceDocument } from './invoice-pdf.ts';

/**
 * The hosted invoice page (docs/invoices.md#the-hosted-invoice-page): one self-contained HTML document,
 * no script, no image, no outside resource, its one style block allowed by its hash. It shows what
 * the PDF shows, with the status and the amount still to pay on top; it names no internal identifier.
 */

const STYLE = `
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;background:#f6f8fa;margin:0;padding:24px}
main{max-width:760px;margin:0 auto;background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:32px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:24px 0 8px}
.muted{color:#59636e;font-size:14px;white-space:pre-line}
.status{display:inline-block;padding:2px 10px;border-radius:12px;font-size:13px;font-weight:600;background:#eaeef2}
.status-paid{background:#dafbe1;color:#116329}.status-open{background:#ddf4ff;color:#0550ae}
.status-void,.status-uncollectible{background:#ffebe9;color:#82071e}
.summary{display:flex;flex-wrap:wrap;gap:24px;margin:20px 0}.summary div{min-width:140px}
.summary dt{font-size:12px;color:#59636e;text-transform:uppercase}.summary dd{margin:2px 0 0;font-size:18px;font-weight:600}
table{width:100%;border-collapse:collapse;font-size:14px}th,td{padding:8px 4px;border-bottom:1px solid #d0d7de;text-align:left}
th.n,td.n{text-align:right;white-space:nowrap}tfoot td{border:none;padding:4px}tfoot tr.strong td{font-weight:600}
a.pdf{display:inline-block;margin-top:24px;padding:8px 16px;border:1px solid #d0d7de;border-radius:6px;color:#0969da;text-decoration:none}
`.trim();

const STYLE_HASH = `'sha256-${crypto.createHash('sha256').update(STYLE).digest('base64')}'`;

/**
 * The pages' own policy, stricter than the API's: nothing loads, nothing runs, only the style block;
 * not framed; the PDF link is a same-origin navigation.
 */
export const HOSTED_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${STYLE_HASH}`,
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const e = escapeHtml;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${e(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

/** The page of a live link. `pdfHref` is relative to the page's own address. */
export function renderHostedInvoicePage(d: InvoiceDocument, pdfHref: string): string {
  const statusClass = /^[a-z_]+$/.test(d.status) ? ` status-${d.status}` : '';
  const lines = d.lines
    .map(
      (line) =>
        `<tr><td>${e(line.description)}</td><td class="n">${line.quantity}</td>` +
        `<td class="n">${e(money(signedLineTotal(line), d.currency))}</td></tr>`,
    )
    .join('\n');
  const totals = totalRows(d)
    .map(([label, cents]) => {
      const strong = label === 'Total' || label === 'Amount remaining' ? ' class="strong"' : '';
      return `<tr${strong}><td colspan="2" class="n">${e(label)}</td><td class="n">${e(money(cents, d.currency))}</td></tr>`;
    })
    .join('\n');
  const issuer = [d.issuer.address, d.issuer.tax_id ? `Tax ID: ${d.issuer.tax_id}` : '']
    .filter(Boolean)
    .join('\n');
  const body = `<header>
<h1>${e(d.issuer.name)}</h1>
${issuer ? `<p class="muted">${e(issuer)}</p>` : ''}
</header>
<h2>Invoice ${e(d.invoice_number)} <span class="status${statusClass}" id="status">${e(d.status)}</span></h2>
${d.client ? `<p class="muted">Billed to ${e(d.client.name)}</p>` : ''}
<dl class="summary">
<div><dt>Total</dt><dd id="total">${e(money(d.total_cents, d.currency))}</dd></div>
<div><dt>Paid</dt><dd id="paid">${e(money(d.amount_paid_cents, d.currency))}</dd></div>
<div><dt>Remaining</dt><dd id="remaining">${e(money(d.amount_remaining_cents, d.currency))}</dd></div>
<div><dt>Due date</dt><dd id="due-date">${e(day(d.due_date))}</dd></div>
<div><dt>Issue date</dt><dd>${e(day(d.issue_date))}</dd></div>
</dl>
<table>
<thead><tr><th>Description</th><th class="n">Qty</th><th class="n">Amount</th></tr></thead>
<tbody>
${lines || '<tr><td colspan="3" class="muted">No line items</td></tr>'}
</tbody>
<tfoot>
${totals}
</tfoot>
</table>
${d.issuer.payment_instructions ? `<h2>Payment instructions</h2>\n<p class="muted">${e(d.issuer.payment_instructions)}</p>` : ''}
${d.memo ? `<h2>Notes</h2>\n<p class="muted">${e(d.memo)}</p>` : ''}
${d.footer ? `<p class="muted">${e(d.footer)}</p>` : ''}
<a class="pdf" href="${e(pdfHref)}">Download PDF</a>`;
  return page(`Invoice ${d.invoice_number} from ${d.issuer.name}`, body);
}

/** Unknown, malformed and revoked links alike: nothing about why, nothing about any invoice. */
export function renderMissingPage(): string {
  return page(
    'Invoice not available',
    `<h1>This invoice is not available</h1>
<p class="muted">The link may be mistyped or no longer valid. Ask the sender for a new link.</p>`,
  );
}

/** Too many bad links from one address: the same page, with when to try again. */
export function renderThrottledPage(retryAfterS: number): string {
  return page(
    'Too many attempts',
    `<h1>Too many attempts</h1>
<p class="muted">Try again in ${retryAfterS} seconds.</p>`,
  );
}
