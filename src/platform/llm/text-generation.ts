/**
 * What a text generator is (CONTRACT §6): the interface, its requests and answers, and its one error
 * type. The generators implement it; `text-generator.ts` picks one from the configuration.
 */
/** Tokens a generation consumed, as the chat API reports them (zeros for the built-in composer). */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export const NO_USAGE: TokenUsage = Object.freeze({
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
});

/** An invoice's values as a reader sees them: dates long-form, money formatted. */
export interface InvoiceFacts {
  invoice_number: string;
  status: string;
  currency: string;
  /** What is still owed, formatted (`$1,234.50`). */
  amount_due: string;
  total: string;
  issue_date: string | null;
  due_date: string | null;
  days_overdue: number;
  /** Whole days from today to the due date (0 today, negative once past); null without a due date. */
  days_until_due: number | null;
  /** Nothing is left to pay. */
  is_settled: boolean;
  client_name: string | null;
  payment_link: string | null;
  organization_name: string;
  current_date: string;
}

/** A passage of the organization's own documents (its knowledge), found for the email, and where from. */
export interface PolicyPassage {
  /** The document's file name: what the email cites. */
  filename: string;
  /** The passage, plain text. */
  text: string;
}

export interface EmailCompositionRequest {
  context_type: 'invoice';
  facts: InvoiceFacts;
  /** The sender's guidance (tone, a point to make). */
  prompt_hint?: string | undefined;
  /** The organization's policy that bears on the email (the collections agent finds it in its knowledge). */
  policy?: PolicyPassage[] | undefined;
}

export interface GeneratedEmail {
  subject: string;
  body_text: string;
  usage: TokenUsage;
}

/** A draft a person reviewed and answered with feedback (an approval's `respond`), to be rewritten. */
export interface EmailRevisionRequest {
  context_type: 'invoice';
  facts: InvoiceFacts;
  draft: { subject: string; body_text: string };
  /** The reviewer's feedback: what to change. */
  feedback: string;
  /** Standing guidance for the writer (an agent's instructions). */
  prompt_hint?: string | undefined;
}

export interface TextGenerator {
  readonly kind: 'builtin' | 'openai';
  /** Resolves with a usable subject and body, or rejects with a TextGenerationError. */
  composeEmail(request: EmailCompositionRequest): Promise<GeneratedEmail>;
  /** The draft rewritten to follow the feedback; rejects with a TextGenerationError. */
  reviseEmail(request: EmailRevisionRequest): Promise<GeneratedEmail>;
}

/**
 * A generation that produced nothing usable. The message is safe to show to the API caller (it never
 * carries the upstream answer or credentials); `usage` is set when the API answered and billed tokens.
 */
export class TextGenerationError extends Error {
  constructor(
    message: string,
    readonly usage?: TokenUsage,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TextGenerationError';
  }
}
