// The one schema: every table of every module, for drizzle-kit (migrations) and the benchmarks' plans.
// The service itself needs no schema object: its queries name their tables (no relational queries).
export * from './modules/tenancy/tenancy.tables.ts';
export * from './modules/api-keys/api-keys.tables.ts';
export * from './platform/http/idempotency.tables.ts';
export * from './modules/parties/parties.tables.ts';
export * from './modules/products/products.tables.ts';
export * from './modules/invoices/invoices.tables.ts';
export * from './modules/invoices/invoice-documents.tables.ts';
export * from './modules/invoices/credits.tables.ts';
export * from './modules/billing/billing.tables.ts';
export * from './modules/email/email-accounts.tables.ts';
export * from './modules/email/email-drafts.tables.ts';
export * from './modules/agents/agents.tables.ts';
export * from './modules/work-tasks/work-tasks.tables.ts';
export * from './modules/work-tasks/approval-emails.tables.ts';
export * from './modules/work-tasks/approval-policies.tables.ts';
export * from './modules/conversations/conversations.tables.ts';
export * from './modules/knowledge/knowledge.tables.ts';
export * from './modules/documents/documents.tables.ts';
export * from './modules/metrics/metrics.tables.ts';
export * from './modules/audit/audit.tables.ts';
export * from './modules/people/sign-in.tables.ts';
export * from './modules/people/invitations.tables.ts';
export * from './modules/webhooks/webhooks.tables.ts';
export * from './modules/slack/slack.tables.ts';
