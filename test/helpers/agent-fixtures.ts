/* eslint-disable @typescript-eslint/no-explicit-any -- API answers are checked field by field */
import crypto from 'node:crypto';
import { expect } from 'vitest';
import { createChatClient } from '../../src/platform/chat/chat.ts';
import { createTextGenerator } from '../../src/platform/llm/text-generator.ts';
import { accountMailers } from '../../src/modules/email/email-sending.ts';
import type { RunEnv } from '../../src/modules/agents/agent-runs.service.ts';
import type { TestApp } from './app.ts';
import { call } from './http.ts';
import { until } from './until.ts';

/**
 * What the agent-run, notification, conversation and collections tests share: polling (short, never
 * a sleep of a guessed length), the receivables a collections agent chases, agents and runs.
 */

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
export const MISSING = '00000000-0000-4000-8000-000000000000';
export const FINISHED = ['completed', 'failed', 'stopped', 'cancelled'];
export const tag = () => crypto.randomBytes(3).toString('hex');

export { until };

/** A day `n` days from now (negative: in the past), as an ISO date-time. */
export const daysFromNow = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString();

export async function post(t: TestApp, key: string, url: string, body: unknown, status = 201) {
  const res = await call(t.app, 'POST', url, { key, body });
  expect(res.status, `POST ${url}: ${res.raw}`).toBe(status);
  return res.body.data;
}

export async function getRun(t: TestApp, key: string, runUid: string) {
  const res = await call(t.app, 'GET', `/api/agent-runs/${runUid}`, { key });
  expect(res.status, res.raw).toBe(200);
  return res.body.data as { id: string; type: string; attributes: Record<string, any> };
}

/** Waits for the run to end (completed, failed, stopped or cancelled) and returns it. */
export function waitForRun(t: TestApp, key: string, runUid: string, ms = 20_000) {
  return until(
    async () => {
      const run = await getRun(t, key, runUid);
      return FINISHED.includes(run.attributes.status) ? run : undefined;
    },
    `run ${runUid} to finish`,
    ms,
  );
}

/** Starts a run through the API (202) and waits for it to end. */
export async function runAgent(t: TestApp, key: string, agentUid: string, body: unknown = {}) {
  const run = await post(t, key, `/api/agents/${agentUid}/runs`, body, 202);
  return waitForRun(t, key, run.id);
}

export async function createAgent(t: TestApp, key: string, body: Record<string, unknown>) {
  return post(t, key, '/api/agents', { name: `Agent ${tag()}`, ...body });
}

/** A collections agent, active, with the default send_email tool (approval required). */
export function createCollectionsAgent(t: TestApp, key: string, body: Record<string, unknown> = {}) {
  return createAgent(t, key, {
    name: `Collector ${tag()}`,
    agent_type: 'collections',
    status: 'active',
    triggers: [{ type: 'manual' }, { type: 'email_received' }],
    ...body,
  });
}

export interface Receivables {
  sku: string;
  /** A client party with a billing contact: `{uid, name, email}`. */
  client(name?: string, email?: string | null): Promise<{ uid: string; name: string; email: string | null }>;
  /** An open AR invoice of $500 per unit for the client, due `dueInDays` from now (negative: overdue). */
  invoice(
    clientUid: string,
    options?: { dueInDays?: number; number?: string; quantity?: number },
  ): Promise<{ uid: string; invoice_number: string; amount_remaining_cents: number }>;
}

/** The receivables a collections agent chases, created through the API with `key` (an admin's). */
export async function receivables(t: TestApp, key: string): Promise<Receivables> {
  const sku = `W-${tag()}`;
  await post(t, key, '/api/products', {
    sku,
    name: 'Widget',
    context_type: 'PRODUCT',
    unit_price: 50_000,
    currency: 'USD',
  });
  return {
    sku,
    client: async (name = `Client ${tag()}`, email = `billing-${tag()}@client.test`) => {
      const party = await post(t, key, '/api/parties', {
        name,
        role: 'client',
        ...(email ? { billing_contact: { name: 'Ana Billing', email } } : {}),
      });
      return { uid: party.uid, name, email };
    },
    invoice: async (clientUid, options = {}) => {
      const invoice = await post(t, key, '/api/invoices', {
        invoice_type: 'ACCOUNTS_RECEIVABLE',
        invoice_number: options.number ?? `INV-${tag()}`,
        status: 'open',
        currency: 'USD',
        issue_date: daysFromNow((options.dueInDays ?? -12) - 30),
        due_date: daysFromNow(options.dueInDays ?? -12),
        client_party_uid: clientUid,
        line_items: [{ context_type: 'PRODUCT', sku, quantity: options.quantity ?? 1 }],
      });
      return invoice;
    },
  };
}

/** The environment the run worker gives executors, for calling `executeRun` directly. */
export function runEnvOf(t: TestApp): RunEnv {
  return {
    db: t.db,
    jobs: t.deps.jobs,
    storage: t.deps.objectStorage,
    config: t.config,
    chat: createChatClient(t.config.chat),
    generator: createTextGenerator(t.config.llm),
    mailers: accountMailers(t.deps.clients.mail, t.deps.secrets),
  };
}

/** A promise with its resolve outside: gates for executors registered by a test. */
export function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
