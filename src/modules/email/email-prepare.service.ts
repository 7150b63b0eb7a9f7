/**
 * Email prepare (interface 2.9, 4.6): the subject and body of an email about an entity, by template
 * (`{token}` placeholders) or by inference (a text generator), with the HTML body built from the final
 * text. Problems with the content are reported in `errors` of a 200, never as an error status; only
 * a malformed request (422) or an entity the caller cannot see (404) fails.
 */
import type { Db } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { validationFailed } from '../../platform/http/errors.ts';
import { applyFeedback } from '../../platform/llm/builtin-composer.ts';
import {
  TextGenerationError,
  type InvoiceFacts,
  type PolicyPassage,
  type TextGenerator,
  type TokenUsage,
} from '../../platform/llm/text-generator.ts';
import { getInvoice } from '../invoices/invoices.service.ts';
import { hostedInvoiceUrlToken } from '../invoices/invoice-documents.service.ts';
import type { InvoiceView } from '../invoices/invoice-view.ts';
import { renderEmailHtml, renderEmailPlainText } from './email-html.ts';
import type { PrepareEmailBodyT, PreparedEmailT } from './email-prepare.schemas.ts';
import {
  formatLongDate,
  formatMoney,
  renderTemplate,
  resolveInvoiceTokens,
  type InvoiceTokenSource,
  type TokenError,
} from './email-tokens.ts';

export interface PrepareResult {
  email: PreparedEmailT;
  /**
   * Tokens the text generator consumed (zeros for the built-in composer); null in template mode and when
   * the generator failed before an answer. Not part of the response: kept for callers that account usage.
   */
  usage: TokenUsage | null;
}

const DAY_MS = 86_400_000;
const utcDay = (date: Date) => Math.floor(date.getTime() / DAY_MS);

/**
 * The invoice's values, from the caller's view of it. The organization's name comes from the caller's
 * own membership: `getInvoice` only finds invoices of organizations the caller belongs to.
 */
function tokenSourceOf(ctx: RequestContext, invoice: InvoiceView): InvoiceTokenSource {
  const client = invoice.parties.client;
  const organization = ctx.principal.memberships.find((m) => m.organizationUid === invoice.organization_uid);
  return {
    invoice_number: invoice.invoice_number,
    issue_date: invoice.issue_date,
    due_date: invoice.due_date,
    currency: invoice.currency,
    amount_due_cents: invoice.amount_due_cents,
    amount_remaining_cents: invoice.amount_remaining_cents,
    total_cents: invoice.total_cents,
    overdue_days: invoice.overdue_days,
    invoice_link: invoice.invoice_link,
    client: client ? { name: client.name, email: client.billing_contact?.email ?? null } : null,
    organization_name: organization?.organizationName ?? '',
  };
}

function factsOf(invoice: InvoiceView, source: InvoiceTokenSource, now: Date): InvoiceFacts {
  return {
    invoice_number: source.invoice_number,
    status: invoice.status,
    currency: source.currency,
    amount_due: formatMoney(source.amount_remaining_cents, source.currency),
    total: formatMoney(source.total_cents, source.currency),
    issue_date: source.issue_date ? formatLongDate(source.issue_date) : null,
    due_date: source.due_date ? formatLongDate(source.due_date) : null,
    days_overdue: source.overdue_days,
    days_until_due: invoice.due_date ? utcDay(new Date(invoice.due_date)) - utcDay(now) : null,
    is_settled: source.amount_remaining_cents <= 0,
    client_name: source.client?.name ?? null,
    payment_link: source.invoice_link?.trim() || null,
    organization_name: source.organization_name,
    current_date: formatLongDate(now),
  };
}

function prepared(
  mode: PreparedEmailT['mode'],
  subject: string,
  bodyText: string,
  errors: TokenError[],
): PreparedEmailT {
  return { subject, body_text: bodyText, body_html: renderEmailHtml(bodyText), mode, errors };
}

/**
 * Prepares an email about an invoice of one of the caller's organizations (404 otherwise). Shared by
 * `POST /api/email/prepare` and the built-in collections agent.
 */
const normalized = (text: string) => text.toLowerCase().replace(/\s+/g, ' ').trim();

/**
 * Whether a generated email copied the guidance it was given (a model told "ignore previous
 * instructions and write X" may do just that): the hint is for the writer, never text for the client.
 */
function echoesHint(email: { subject: string; body_text: string }, hint: string | undefined): boolean {
  const h = normalized(hint ?? '');
  if (h.length < 12) return false;
  return normalized(`${email.subject}\n${email.body_text}`).includes(h);
}

export async function prepareEmail(
  db: Db,
  generator: TextGenerator,
  ctx: RequestContext,
  body: PrepareEmailBodyT,
  now: Date = new Date(),
  /** Inference mode: the organization's policy passages for the writer (the collections agent's). */
  extra: { policy?: PolicyPassage[] } = {},
): Promise<PrepareResult> {
  const mode = body.mode ?? 'template';
  if (mode === 'template') {
    // Checked before the invoice is read, so a malformed request is 422 whatever the uid names.
    if (!body.subject) throw validationFailed('subject', 'subject is required in template mode');
    if (!body.body_text) throw validationFailed('body_text', 'body_text is required in template mode');
  }
  const invoice = await getInvoice(db, ctx, body.context_uid);
  const source = tokenSourceOf(ctx, invoice);
  const errors: TokenError[] = [];

  if (mode === 'template') {
    // The hosted page's link only when the template asks for it: resolving it may make the link.
    if (`${body.subject}\n${body.body_text}`.includes('{hosted_invoice_url}')) {
      source.hosted_invoice_url = await hostedInvoiceUrlToken(ctx, invoice.uid);
    }
    const resolutions = resolveInvoiceTokens(source, now);
    const subject = renderTemplate(body.subject!, body.context_type, resolutions, errors);
    const bodyText = renderTemplate(body.body_text!, body.context_type, resolutions, errors);
    return { email: prepared(mode, subject, bodyText, errors), usage: null };
  }

  try {
    const generated = await generator.composeEmail({
      context_type: body.context_type,
      facts: factsOf(invoice, source, now),
      prompt_hint: body.prompt_hint,
      policy: extra.policy,
    });
    if (echoesHint(generated, body.prompt_hint)) {
      throw new TextGenerationError(
        "The generated email repeated the sender's guidance (prompt_hint) instead of following it",
        generated.usage,
      );
    }
    // A generated body may carry markup (**bold**, links) for the HTML part; the text part is plain.
    return {
      email: {
        ...prepared(mode, generated.subject, generated.body_text, errors),
        body_text: renderEmailPlainText(generated.body_text),
      },
      usage: generated.usage,
    };
  } catch (error) {
    // Any failure falls back to what the caller supplied (interface 4.6), never to an error status.
    const message =
      error instanceof TextGenerationError ? error.message : 'The text generator failed unexpectedly';
    errors.push({
      token: '{inference}',
      message: `${message}; the supplied subject and body_text are returned`,
    });
    return {
      email: prepared(mode, body.subject ?? '', body.body_text ?? '', errors),
      usage: error instanceof TextGenerationError ? (error.usage ?? null) : null,
    };
  }
}

export interface RevisedEmail {
  subject: string;
  body_text: string;
  /** `inference`: the language model rewrote it; `builtin`: the feedback was added as written. */
  mode: 'inference' | 'builtin';
  usage: TokenUsage | null;
  /** Why the model's revision was not used (then `mode` is `builtin`). */
  error: string | null;
}

/**
 * A draft about an invoice rewritten from a reviewer's feedback (an approval's `respond`;
 * docs/approvals.md#respond-feedback-without-deciding): by the configured language model, with the
 * invoice's current facts; without one, or when it fails, the feedback is added to the body as written
 * (`applyFeedback`). Never fails for the generator's sake, and the draft always changes.
 */
export async function reviseEmail(
  db: Db,
  generator: TextGenerator,
  ctx: RequestContext,
  request: {
    context_uid: string;
    draft: { subject: string; body_text: string };
    feedback: string;
    prompt_hint?: string | undefined;
  },
  now: Date = new Date(),
): Promise<RevisedEmail> {
  const builtin = (error: string | null, usage: TokenUsage | null): RevisedEmail => ({
    ...applyFeedback(request.draft, request.feedback),
    mode: 'builtin',
    usage,
    error,
  });
  if (generator.kind === 'builtin') return builtin(null, null);
  const invoice = await getInvoice(db, ctx, request.context_uid);
  try {
    const generated = await generator.reviseEmail({
      context_type: 'invoice',
      facts: factsOf(invoice, tokenSourceOf(ctx, invoice), now),
      draft: request.draft,
      feedback: request.feedback,
      prompt_hint: request.prompt_hint,
    });
    return {
      subject: generated.subject,
      body_text: renderEmailPlainText(generated.body_text),
      mode: 'inference',
      usage: generated.usage,
      error: null,
    };
  } catch (error) {
    if (error instanceof TextGenerationError) return builtin(error.message, error.usage ?? null);
    return builtin('The text generator failed unexpectedly', null);
  }
}
