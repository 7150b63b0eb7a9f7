/**
 * Knowledge that can be found (issue 22 item 5; docs/knowledge.md#full-text-search): the extracted text
 * of knowledge documents and documents, indexed in the organization's search language, through
 * `GET /api/knowledge/search` (ranked, paged, highlighted snippets) and `GET /api/search`. Real uploads
 * (presigned POST, confirm, the pg-boss workflow, extraction in its thread), on both engines.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processKnowledgeDocument } from '../../src/modules/knowledge/knowledge-processing.ts';
import { createCollectionsAgent, receivables, runAgent, tag } from '../helpers/agent-fixtures.ts';
import { FakeLlm } from '../helpers/fake-llm.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { listeningTestApp, uploadWithForm, type ListeningTestApp } from '../helpers/presigned-post.ts';
import { createPrincipals, type OrgPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { CONTENT_TYPES, docx } from '../helpers/sample-files.ts';
import { until } from '../helpers/until.ts';

let t: ListeningTestApp;
let p: Principals;
let llm: FakeLlm;

interface Hit {
  knowledge_document_uid: string;
  filename: string;
  content_type: string;
  rank: number;
  snippet: { text: string; highlights: [number, number][] };
  created_at: string;
  updated_at: string;
}

/** Presigns and uploads a DOCX of these paragraphs; returns the document's uid (still `presigned`). */
async function uploadDocx(org: OrgPrincipals, filename: string, paragraphs: string[]): Promise<string> {
  const res = await call(t.app, 'POST', '/api/knowledge/presign', {
    key: org.admin.key,
    body: { filename, organization_uid: org.uid, content_type: CONTENT_TYPES.docx },
  });
  expect(res.status, res.raw).toBe(200);
  const upload = await uploadWithForm(res.body.data.presigned_post, {
    content: docx(paragraphs),
    filename,
    type: CONTENT_TYPES.docx,
  });
  expect(upload.status, upload.body).toBe(204);
  return res.body.data.knowledge_document_uid as string;
}

/** A knowledge document through the whole flow, once `ready`. */
async function addKnowledge(org: OrgPrincipals, filename: string, paragraphs: string[]): Promise<string> {
  const uid = await uploadDocx(org, filename, paragraphs);
  const confirmed = await call(t.app, 'POST', '/api/knowledge/confirm', {
    key: org.admin.key,
    body: { knowledge_document_uid: uid, organization_uid: org.uid },
  });
  expect(confirmed.status, confirmed.raw).toBe(202);
  await until(async () => {
    const { data } = (await call(t.app, 'GET', `/api/knowledge/${uid}`, { key: org.admin.key })).body;
    return data.status === 'ready' && data;
  }, `knowledge document ${filename} to be ready`);
  return uid;
}

const search = (q: string, options: { key?: string; query?: Record<string, string | number> } = {}) =>
  call<{ data: { items: Hit[]; _meta: Record<string, number> } }>(t.app, 'GET', '/api/knowledge/search', {
    key: options.key ?? p.orgA.admin.key,
    query: { q, ...options.query },
  });

const uidsOf = (hits: Hit[]) => hits.map((h) => h.knowledge_document_uid);
const highlighted = (hit: Hit) => hit.snippet.highlights.map(([s, e]) => hit.snippet.text.slice(s, e));

let policy: string;
let refundsOften: string;
let refundsOnce: string;
let foreignPolicy: string;
let spanish: string;

beforeAll(async () => {
  // The collections agent's writer: a fake OpenAI-compatible model (search itself needs none).
  llm = await new FakeLlm().start();
  t = await listeningTestApp({
    workers: true,
    env: { RATE_LIMIT_MAX: '100000', LLM_BASE_URL: llm.baseUrl, LLM_MODEL: 'x' },
  });
  p = await createPrincipals(t);
  policy = await addKnowledge(p.orgA, 'late-payment-policy.docx', [
    'Late payment policy',
    'A client who pays after the due date owes a late fee of 1.5% per month on the unpaid balance.',
    'Payment terms are net 30 days from the invoice date unless the contract says otherwise.',
  ]);
  refundsOften = await addKnowledge(p.orgA, 'refunds.docx', [
    'Refunds: a refund is issued within 14 days. Every refund needs a refund form signed by the client.',
  ]);
  refundsOnce = await addKnowledge(p.orgA, 'handbook.docx', [
    'The office opens at nine. Holidays follow the calendar. A refund is handled by the finance team.',
  ]);
  // Another tenant with the same words: never visible to orgA.
  foreignPolicy = await addKnowledge(p.orgB, 'orgb-late-payment.docx', [
    'Org B late payment policy: a client who pays late owes a refund fee.',
  ]);
  const patched = await call(t.app, 'PATCH', `/api/organization/${p.orgB.uid}/settings`, {
    key: p.orgB.admin.key,
    body: { search_language: 'spanish' },
  });
  expect(patched.status, patched.raw).toBe(200);
  expect(patched.body.data.search_language).toBe('spanish');
  spanish = await addKnowledge(p.orgB, 'politica-de-cobro.docx', [
    'Política de cobro: cobraremos intereses de mora sobre los pagos atrasados.',
  ]);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await llm?.close();
});

describe('GET /api/knowledge/search', () => {
  it('stems in english: "paying" finds "pays", "payments" finds "payment"; the snippet marks the words', async () => {
    const paying = await search('paying');
    expect(paying.status, paying.raw).toBe(200);
    expect(uidsOf(paying.body.data.items)).toEqual([policy]);
    const hit = paying.body.data.items[0]!;
    expect(hit).toMatchObject({
      knowledge_document_uid: policy,
      filename: 'late-payment-policy.docx',
      content_type: CONTENT_TYPES.docx,
    });
    expect(hit.rank).toBeGreaterThan(0);
    expect(highlighted(hit)).toEqual(['pays']);
    expect(hit.snippet.text).toContain('A client who pays after the due date');
    // Plain text: no markers, no markup, line breaks folded.
    expect(hit.snippet.text).not.toMatch(/[\u0000-\u001f<>]/);

    const payments = await search('payments');
    expect(uidsOf(payments.body.data.items)).toEqual([policy]);
    expect(highlighted(payments.body.data.items[0]!).map((w) => w.toLowerCase())).toContain('payment');
  });

  it('web-search syntax: a phrase, and words that must all be there', async () => {
    expect(uidsOf((await search('"late fee"')).body.data.items)).toEqual([policy]);
    expect(uidsOf((await search('"fee late"')).body.data.items)).toEqual([]);
    expect(uidsOf((await search('refund -finance')).body.data.items)).toEqual([refundsOften]);
    // Stop words alone match nothing (and are no error).
    const stop = await search('the of');
    expect(stop.status).toBe(200);
    expect(stop.body.data.items).toEqual([]);
  });

  it('ranks by relevance: the document that is about refunds before the one that mentions one', async () => {
    const res = await search('refund');
    expect(uidsOf(res.body.data.items)).toEqual([refundsOften, refundsOnce]);
    const [first, second] = res.body.data.items;
    expect(first!.rank).toBeGreaterThan(second!.rank);
    expect(highlighted(first!).length).toBeGreaterThan(highlighted(second!).length);
  });

  it('pages: per_page and page, with _meta counting every match', async () => {
    const one = await search('refund', { query: { per_page: 1 } });
    expect(uidsOf(one.body.data.items)).toEqual([refundsOften]);
    expect(one.body.data._meta).toEqual({ page: 1, per_page: 1, total_pages: 2, total_items: 2 });
    const two = await search('refund', { query: { per_page: 1, page: 2 } });
    expect(uidsOf(two.body.data.items)).toEqual([refundsOnce]);
    const past = await search('refund', { query: { per_page: 1, page: 3 } });
    expect(past.body.data.items).toEqual([]);
    expect(past.body.data._meta.total_items).toBe(2);
  });

  it("searches a Spanish organization's knowledge in spanish; a new language re-indexes", async () => {
    const asB = (q: string) => search(q, { key: p.orgB.admin.key });
    const res = await asB('cobrar interés');
    expect(uidsOf(res.body.data.items)).toEqual([spanish]);
    // Spanish stems: "cobrar" is "cobro" and "cobraremos"; "interés" is "intereses".
    expect(highlighted(res.body.data.items[0]!)).toEqual(['cobro', 'cobraremos', 'intereses']);
    // In english the same words do not stem alike: switching re-indexes the organization's texts.
    const patch = (language: string) =>
      call(t.app, 'PATCH', `/api/organization/${p.orgB.uid}/settings`, {
        key: p.orgB.admin.key,
        body: { search_language: language },
      });
    expect((await patch('english')).status).toBe(200);
    expect((await asB('cobrar interés')).body.data.items).toEqual([]);
    expect(uidsOf((await asB('cobraremos')).body.data.items)).toEqual([spanish]);
    expect((await patch('spanish')).status).toBe(200);
    expect(uidsOf((await asB('cobrar interés')).body.data.items)).toEqual([spanish]);
    // A configuration PostgreSQL does not ship (or not on both engines) is refused.
    const bad = await patch('klingon');
    expectErrorBody(bad, 422);
  });

  it("never shows another organization's documents, whatever the words", async () => {
    for (const q of ['late payment', 'pays', 'refund fee', 'policy']) {
      const uids = uidsOf((await search(q)).body.data.items);
      expect(uids).not.toContain(foreignPolicy);
      expect(uids).not.toContain(spanish);
    }
    // And orgB sees its own, not orgA's.
    const asB = uidsOf((await search('refund', { key: p.orgB.admin.key })).body.data.items);
    expect(asB).toEqual([foreignPolicy]);
  });

  it('does not match a document whose text is not extracted yet (presigned, processing), then does', async () => {
    const words = ['Escrow arrangements for disputed invoices are described here.'];
    const presigned = await uploadDocx(p.orgA, 'escrow-presigned.docx', words);
    const processing = await uploadDocx(p.orgA, 'escrow-processing.docx', words);
    // As a confirm leaves it before its job has run (no job here: the test runs the workflow itself).
    await t.db.execute(
      sql`update knowledge_documents set status = 'processing' where uid = ${processing} and organization_uid = ${p.orgA.uid}`,
    );
    expect((await search('escrow')).body.data.items).toEqual([]);
    const searchApi = await call(t.app, 'GET', '/api/search', {
      key: p.orgA.admin.key,
      query: { q: 'escrow arrangements', types: 'knowledge' },
    });
    expect(searchApi.body.data.data).toEqual([]);

    const outcome = await processKnowledgeDocument(
      { db: t.db, storage: t.deps.objectStorage, jobs: t.deps.jobs },
      { organization_uid: p.orgA.uid, knowledge_document_uid: processing },
    );
    expect(outcome).toBe('ready');
    expect(uidsOf((await search('escrow')).body.data.items)).toEqual([processing]);
    expect(uidsOf((await search('escrow')).body.data.items)).not.toContain(presigned);
  });

  it('members search too (knowledge:write)', async () => {
    const res = await search('paying', { key: p.orgA.member.key });
    expect(res.status).toBe(200);
    expect(uidsOf(res.body.data.items)).toEqual([policy]);
  });

  it('400 for q shorter than 2 characters (after trimming), missing, or per_page past 50', async () => {
    expectErrorBody(await search(' a '), 400, 'invalid_parameter');
    expectErrorBody(
      await call(t.app, 'GET', '/api/knowledge/search', { key: p.orgA.admin.key }),
      400,
      'invalid_parameter',
    );
    expectErrorBody(await search('refund', { query: { per_page: 51 } }), 400, 'invalid_parameter');
  });
});

describe('GET /api/search finds knowledge and documents by their text', () => {
  it('knowledge: by filename first (rule 1), then by text; the item shape of interface 2.6', async () => {
    const res = await call(t.app, 'GET', '/api/search', {
      key: p.orgA.admin.key,
      query: { q: 'paying', types: 'knowledge' },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.data).toEqual([
      {
        entity_uid: policy,
        entity_type: 'knowledge',
        label: 'late-payment-policy.docx',
        subtitle: CONTENT_TYPES.docx,
      },
    ]);
    // "refund" is in the name of refunds.docx and in the text of handbook.docx.
    const both = await call(t.app, 'GET', '/api/search', {
      key: p.orgA.admin.key,
      query: { q: 'refund', types: 'knowledge' },
    });
    expect(both.body.data.data.map((i: { entity_uid: string }) => i.entity_uid)).toEqual([
      refundsOften,
      refundsOnce,
    ]);
    const foreign = await call(t.app, 'GET', '/api/search', {
      key: p.orgA.admin.key,
      query: { q: 'late payment', types: 'knowledge,document' },
    });
    expect(foreign.body.data.data.map((i: { entity_uid: string }) => i.entity_uid)).not.toContain(
      foreignPolicy,
    );
  });

  it('documents: the text of an uploaded file is extracted by a job, then found', async () => {
    const form = new FormData();
    form.append(
      'file',
      new Blob(['Master services agreement.\nThe supplier invoices quarterly in arrears.'], {
        type: 'text/plain',
      }),
      'msa.txt',
    );
    form.append('document_name', 'Services agreement');
    form.append('organization_uid', p.orgA.uid);
    const request = new Request('http://form.test/', { method: 'POST', body: form });
    const uploaded = await t.app.inject({
      method: 'POST',
      url: '/api/documents',
      headers: {
        authorization: `Bearer ${p.orgA.admin.key}`,
        'content-type': request.headers.get('content-type')!,
      },
      payload: Buffer.from(await request.arrayBuffer()),
    });
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    const uid = JSON.parse(uploaded.body).data.uid as string;
    const find = (key = p.orgA.admin.key) =>
      call(t.app, 'GET', '/api/search', { key, query: { q: 'invoicing arrears', types: 'document' } });
    const found = await until(async () => {
      const items = (await find()).body.data.data as { entity_uid: string }[];
      return items.length > 0 && items;
    }, 'the document text to be extracted');
    expect(found).toEqual([
      { entity_uid: uid, entity_type: 'document', label: 'Services agreement', subtitle: 'msa.txt' },
    ]);
    expect((await find(p.orgB.admin.key)).body.data.data).toEqual([]);
  });
});

describe("the collections agent cites its organization's policy", () => {
  /** An overdue invoice of `org`'s, the agent's run over it, and the approval it raised for it. */
  async function remind(org: OrgPrincipals) {
    const r = await receivables(t, org.admin.key);
    const client = await r.client(`Client ${tag()}`, `ap-${tag()}@client.test`);
    const invoice = await r.invoice(client.uid, { dueInDays: -20 });
    const agent = await createCollectionsAgent(t, org.admin.key);
    const calls = llm.requests.length;
    const run = await runAgent(t, org.admin.key, agent.uid);
    expect(run.attributes.status, JSON.stringify(run.attributes)).toBe('completed');
    const approval = run.attributes.outcome.approvals.find(
      (a: { invoice_uid: string }) => a.invoice_uid === invoice.uid,
    );
    const task = await call(t.app, 'GET', `/api/work-tasks/${approval.task_uid}`, { key: org.admin.key });
    expect(task.status, task.raw).toBe(200);
    const prompts = llm.requests.slice(calls).map((request) => JSON.stringify(request.json.messages));
    return { task: task.body.data, prompts };
  }

  it("gives the model the best passages of the organization's own knowledge, with their file names", async () => {
    llm.behaviour = {
      kind: 'succeed',
      content: JSON.stringify({
        subject: 'Reminder',
        body_text: 'Please pay (see late-payment-policy.docx).',
      }),
    };
    const { task, prompts } = await remind(p.orgA);
    expect(prompts).toHaveLength(1);
    const prompt = prompts[0]!;
    expect(prompt).toContain('late-payment-policy.docx');
    expect(prompt).toContain('owes a late fee of 1.5% per month');
    // Another organization's policy, with the same words, is never used.
    expect(prompt).not.toContain('orgb-late-payment.docx');
    expect(prompt).not.toContain('Org B');
    expect(task.reasoning).toContain("with the organization's policy from late-payment-policy.docx");
    expect(task.tool_args.body).toContain('late-payment-policy.docx');
  });

  it("another organization's agent sees only its own knowledge (here in spanish)", async () => {
    llm.behaviour = { kind: 'succeed' };
    const { prompts } = await remind(p.orgB);
    const prompt = prompts[0]!;
    expect(prompt).toContain('politica-de-cobro.docx');
    expect(prompt).not.toContain('late-payment-policy.docx');
    expect(prompt).not.toContain('1.5% per month');
  });

  it('the template (the model failing) carries one cited sentence of the policy', async () => {
    llm.behaviour = { kind: 'fail', status: 500 };
    const { task } = await remind(p.orgA);
    expect(task.tool_args.body).toMatch(
      /As set out in our policy document late-payment-policy\.docx: ".*owes a late fee of 1\.5% per month.*"/,
    );
    // Before the sign-off, which stays last.
    expect(task.tool_args.body.trim()).toMatch(/Thank you,\n[^\n]+$/);
    expect(task.tool_args.body).not.toContain('orgb-late-payment.docx');
  });
});

commonRouteChecks(
  'GET /api/knowledge/search',
  {
    method: 'GET',
    url: () => '/api/knowledge/search?q=payment',
    scope: 'knowledge:write',
    foreignOrganizationUrl: ({ p }) => `/api/knowledge/search?q=payment&organization_uid=${p.orgB.uid}`,
  },
  () => ({ t, p }),
);
