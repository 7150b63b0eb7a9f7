/**
 * The embedded text generator: a deterministic payment reminder written from the invoice's values, so
 * inference mode works with no outside service. The same input always gives the same text.
 */
import {
  NO_USAGE,
  type EmailCompositionRequest,
  type EmailRevisionRequest,
  type GeneratedEmail,
  type InvoiceFacts,
  type PolicyPassage,
  type TextGenerator,
} from './text-generation.ts';

type Tone = 'gentle' | 'firm';

export interface HintReading {
  /** A tone the hint asks for, if any. */
  tone?: Tone;
}

const FIRM =
  /\b(firm(ly)?|stern(ly)?|strict(ly)?|urgent(ly)?|final|serious(ly)?|escalat\w*|immediate(ly)?)\b/i;
const GENTLE = /\b(gentle|gently|friendly|soft(ly)?|polite(ly)?|kind(ly)?|warm(ly)?|courteous(ly)?)\b/i;

/**
 * What the built-in composer takes from free-text guidance: a tone (from words like "firm" or
 * "friendly"), nothing else. The hint is an instruction to the writer, typed by the sender (or passed
 * on from whatever an agent read): none of its words are ever pasted into the email.
 */
export function readHint(hint: string | undefined): HintReading {
  const text = (hint ?? '').replace(/\s+/g, ' ').trim();
  if (text === '') return {};
  if (FIRM.test(text)) return { tone: 'firm' };
  if (GENTLE.test(text)) return { tone: 'gentle' };
  return {};
}

const days = (n: number) => `${n} ${n === 1 ? 'day' : 'days'}`;

type Timing =
  | { kind: 'settled' }
  | { kind: 'undated' }
  | { kind: 'upcoming'; inDays: number; due: string }
  | { kind: 'today'; due: string }
  | { kind: 'overdue'; overdue: number; due: string };

function timingOf(f: InvoiceFacts): Timing {
  if (f.is_settled) return { kind: 'settled' };
  if (f.due_date === null) return { kind: 'undated' };
  if (f.days_overdue > 0) return { kind: 'overdue', overdue: f.days_overdue, due: f.due_date };
  const inDays = f.days_until_due ?? 0;
  return inDays > 0 ? { kind: 'upcoming', inDays, due: f.due_date } : { kind: 'today', due: f.due_date };
}

function subjectOf(f: InvoiceFacts, timing: Timing, tone: Tone): string {
  const n = f.invoice_number;
  switch (timing.kind) {
    case 'settled':
      return `Invoice ${n} is paid in full: thank you`;
    case 'undated':
      return `Invoice ${n}: ${f.amount_due} awaiting payment`;
    case 'upcoming':
      return `Upcoming payment: invoice ${n} is due on ${timing.due}`;
    case 'today':
      return `Reminder: invoice ${n} is due today`;
    case 'overdue':
      return tone === 'firm'
        ? `Overdue notice: invoice ${n} (${f.amount_due}) is ${days(timing.overdue)} past due`
        : `Reminder: invoice ${n} is ${days(timing.overdue)} overdue`;
  }
}

function openingOf(f: InvoiceFacts, timing: Timing, tone: Tone): string {
  const what = `invoice ${f.invoice_number} for ${f.amount_due}`;
  switch (timing.kind) {
    case 'settled':
      return `Our records show that invoice ${f.invoice_number} (total ${f.total}) is paid in full. Thank you for your payment.`;
    case 'undated':
      return tone === 'firm'
        ? `Our records show that ${what} is still unpaid. Please arrange payment as soon as possible.`
        : `This is a friendly reminder that ${what} is awaiting payment.`;
    case 'upcoming':
      return tone === 'firm'
        ? `Please note that ${what} is due on ${timing.due}, in ${days(timing.inDays)}. Please make sure payment reaches us by then.`
        : `This is a friendly reminder that ${what} is due on ${timing.due}, in ${days(timing.inDays)}.`;
    case 'today':
      return tone === 'firm'
        ? `Please note that ${what} is due today, ${timing.due}. Please make sure payment reaches us today.`
        : `This is a friendly reminder that ${what} is due today, ${timing.due}.`;
    case 'overdue':
      return tone === 'firm'
        ? `Our records show that ${what}, due on ${timing.due}, is now ${days(timing.overdue)} overdue. ` +
            'Please arrange payment as soon as possible, or reply to let us know when we can expect it.'
        : `This is a friendly reminder that ${what} was due on ${timing.due} and is now ${days(timing.overdue)} overdue.`;
  }
}

function summaryOf(f: InvoiceFacts, timing: Timing): string[] {
  const overdue =
    timing.kind === 'overdue'
      ? String(timing.overdue)
      : timing.kind === 'upcoming'
        ? `0 (due in ${days(timing.inDays)})`
        : timing.kind === 'today'
          ? '0 (due today)'
          : '0';
  return [
    `Invoice: ${f.invoice_number}`,
    `Amount due: ${f.amount_due}`,
    `Due date: ${f.due_date ?? 'not set'}`,
    `Days overdue: ${overdue}`,
  ];
}

/** The reminder for an invoice; `prompt_hint` may set the tone. */
export function composeReminder(request: EmailCompositionRequest): { subject: string; body_text: string } {
  const f = request.facts;
  const hint = readHint(request.prompt_hint);
  const timing = timingOf(f);
  // Long overdue reads firmer by default; the sender's hint decides when it names a tone.
  const tone: Tone = hint.tone ?? (timing.kind === 'overdue' && timing.overdue > 30 ? 'firm' : 'gentle');
  const paragraphs: string[] = [f.client_name ? `Hello ${f.client_name},` : 'Hello,'];
  paragraphs.push(openingOf(f, timing, tone));
  if (timing.kind !== 'settled') {
    paragraphs.push(summaryOf(f, timing).join('\n'));
    paragraphs.push(
      f.payment_link
        ? `You can pay online at ${f.payment_link}.`
        : 'If you need a copy of the invoice or our payment details, just reply to this email.',
    );
  }
  const policy = request.policy?.[0];
  if (policy && timing.kind !== 'settled') paragraphs.push(policyParagraph(policy));
  if (timing.kind === 'overdue' || timing.kind === 'today' || timing.kind === 'undated') {
    paragraphs.push('If you have already sent payment, please disregard this message.');
  }
  paragraphs.push(`${tone === 'firm' ? 'Regards' : 'Thank you'},\n${f.organization_name}`);
  return { subject: subjectOf(f, timing, tone), body_text: paragraphs.join('\n\n') };
}

/**
 * One cited sentence of the organization's policy: the passage quoted as found (its longest fragment,
 * a heading being the shortest; marked as cut where it starts or ends mid-sentence), and the document
 * it is from.
 */
export function policyParagraph(policy: PolicyPassage): string {
  const fragments = policy.text.split(' … ').map((f) => f.replace(/\s+/g, ' ').trim());
  let text = fragments.reduce((longest, f) => (f.length > longest.length ? f : longest), '');
  if (/^[a-z]/.test(text)) text = `…${text}`;
  if (!/[.!?]$/.test(text)) text = `${text}…`;
  return `As set out in our policy document ${policy.filename}: "${text}"`;
}

/** The draft with the policy's cited sentence as a paragraph before its last one (the sign-off). */
export function withPolicy(
  email: { subject: string; body_text: string },
  policy: PolicyPassage | undefined,
): { subject: string; body_text: string } {
  if (!policy) return email;
  const paragraphs = email.body_text.trim().split(/\n{2,}/);
  const at = paragraphs.length > 1 ? paragraphs.length - 1 : paragraphs.length;
  paragraphs.splice(at, 0, policyParagraph(policy));
  return { subject: email.subject, body_text: paragraphs.join('\n\n') };
}

/**
 * A draft revised from a reviewer's feedback without a language model: nothing here can understand an
 * instruction, so the feedback is taken as text the reviewer wants the client to read. It becomes its
 * own paragraph, as written (blank lines tidied), before the draft's last paragraph (the sign-off), or
 * after the only one; the subject and every other word stay. The same input always gives the same
 * text, and the draft always changes. Unlike `prompt_hint`, which anyone composing may pass on from
 * what an agent read, the feedback comes from a person allowed to decide the approval, who could as
 * well have edited the draft; the revision comes back to them for approval before anything is sent.
 */
export function applyFeedback(
  draft: { subject: string; body_text: string },
  feedback: string,
): { subject: string; body_text: string } {
  const note = feedback
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const paragraphs = draft.body_text
    .replace(/\r\n?/g, '\n')
    .trim()
    .split(/\n{2,}/)
    .filter((p) => p.trim() !== '');
  if (note === '') return { subject: draft.subject, body_text: paragraphs.join('\n\n') };
  const at = paragraphs.length > 1 ? paragraphs.length - 1 : paragraphs.length;
  paragraphs.splice(at, 0, note);
  return { subject: draft.subject, body_text: paragraphs.join('\n\n') };
}

export class BuiltinComposer implements TextGenerator {
  readonly kind = 'builtin' as const;

  async composeEmail(request: EmailCompositionRequest): Promise<GeneratedEmail> {
    return { ...composeReminder(request), usage: { ...NO_USAGE } };
  }

  async reviseEmail(request: EmailRevisionRequest): Promise<GeneratedEmail> {
    return { ...applyFeedback(request.draft, request.feedback), usage: { ...NO_USAGE } };
  }
}
