import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import prettier from 'prettier';
import { ERROR_CODES, type ErrorCode } from '../../src/platform/http/errors.ts';
import {
  EXAMPLES_FILE,
  errorCodesOf,
  packageRoot,
  type RecordedExample,
} from '../../src/platform/http/openapi.ts';
import type { App } from '../../src/platform/http/types.ts';

// What the test suite's apps answer, written down as they answer it, and checked when the run ends
// (docs/openapi.md#error-answers):
//
// - every error a documented route answers (route, status, `code`): a code the route does not declare
//   in the registry of error codes (`errorCodesOf`) fails the run, with the list;
// - with RECORD_OPENAPI_EXAMPLES=1, one JSON request body and its success answer per operation, written
//   (secrets replaced) to docs/openapi-examples.json, which the OpenAPI document shows as examples.
//
// Test files run in several worker processes (and files share a process, vitest.config.ts), so each
// process appends to a file of its own in one directory for the whole run, made by the global setup
// (`openRouteRecords`); its teardown reads them all once every project has finished.

declare module 'vitest' {
  export interface ProvidedContext {
    routeRecordsDir: string;
  }
}

/** An error answered by a route of the document. */
interface ErrorRecord {
  kind: 'error';
  /** `METHOD /template`, as registered (`/api/invoices/:uid`). */
  route: string;
  operationId: string;
  status: number;
  /** null when the body is not the error body with a code. */
  code: string | null;
  /** Everything the registry declares for the route, when it answered. */
  declared: string[];
}

/** A success answer, a candidate for the operation's example. */
interface ExampleRecord extends RecordedExample {
  kind: 'example';
  operationId: string;
  /** Higher is a better example (`exampleScore`). */
  score: number;
}

/** A record the hook could not make. */
interface FailureRecord {
  kind: 'failure';
  message: string;
}

type RouteRecord = ErrorRecord | ExampleRecord | FailureRecord;

export const RECORD_EXAMPLES = process.env.RECORD_OPENAPI_EXAMPLES === '1';

/** The document itself is no example of itself. */
const NO_EXAMPLE = new Set(['getOpenApiDocument']);

/** Rich but readable: the largest answer up to 4 KiB; past that, the smaller the better. */
const EXAMPLE_SIZE = 4096;
function exampleScore(requestText: string | undefined, responseText: string): number {
  const size = responseText.length + (requestText?.length ?? 0);
  return (requestText !== undefined ? 1e8 : 0) + (size <= EXAMPLE_SIZE ? 1e7 + size : 1e7 - size);
}

const isJson = (type: unknown) => typeof type === 'string' && /^application\/json\b/.test(type);

/**
 * Installs the recording hook on a test app (test/helpers/app.ts). Nothing is recorded outside the test
 * suite: the server never has this hook.
 */
export function recordRoutes(app: App, dir: string | undefined): void {
  if (!dir) return;
  const file = path.join(dir, `${process.pid}.jsonl`);
  const write = (record: RouteRecord) => fs.appendFileSync(file, `${JSON.stringify(record)}\n`);
  // Per process, each finding once, and an example only when better than the one already written.
  const seen = processState();

  const observe = (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const options = request.routeOptions;
    // Route-less answers (404 route_not_found, 405 method_not_allowed) belong to no operation, and
    // routes outside the document have no operationId (the /docs pages, routes a test adds) or are
    // hidden from it (GET /metrics).
    const schema = options.schema as { operationId?: string; hide?: boolean } | undefined;
    const operationId = schema?.operationId;
    if (request.is404 || !options.url || !operationId || schema.hide) return;
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    const status = reply.statusCode;
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString() : null;
    const json = isJson(reply.getHeader('content-type'));
    if (status >= 400) {
      // The embedded store's S3 XML errors are documented by their route, not by the registry.
      if (text !== null && !json && /^\s*</.test(text)) return;
      let code: string | null = null;
      try {
        const body = JSON.parse(text ?? '') as { code?: unknown };
        if (typeof body.code === 'string') code = body.code;
      } catch {
        // Not JSON: recorded without a code, which the check reports.
      }
      const route = `${method} ${options.url}`;
      const finding = `${route} ${status} ${code}`;
      if (seen.errors.has(finding)) return;
      seen.errors.add(finding);
      const declared = errorCodesOf({
        method,
        url: options.url,
        schema: options.schema,
        config: options.config,
      });
      write({ kind: 'error', route, operationId, status, code, declared });
      return;
    }
    if (!RECORD_EXAMPLES || status < 200 || status >= 300 || !json || text === null) return;
    if (NO_EXAMPLE.has(operationId)) return;
    const requestText =
      isJson(request.headers['content-type']) && request.body !== undefined
        ? JSON.stringify(request.body)
        : undefined;
    const score = exampleScore(requestText, text);
    if ((seen.examples.get(operationId) ?? -Infinity) >= score) return;
    seen.examples.set(operationId, score);
    write({
      kind: 'example',
      operationId,
      score,
      ...(requestText !== undefined ? { request: JSON.parse(requestText) as unknown } : {}),
      response: { status, body: JSON.parse(text) as unknown },
    });
  };

  app.addHook('onSend', (request, reply, payload, done) => {
    try {
      observe(request, reply, payload);
    } catch (error) {
      // A record that could not be made must not change the answer the test sees; the check at the end
      // of the run reports it (and fails the run) instead.
      console.error('route record failed', error);
      try {
        write({ kind: 'failure', message: `${request.method} ${request.url}: ${String(error)}` });
      } catch {
        // Nothing left to write to: the missing records cannot be told apart from a quiet run.
      }
    }
    done(null, payload);
  });
}

function processState() {
  const holder = globalThis as { __remitRouteRecordState?: ReturnType<typeof newState> };
  return (holder.__remitRouteRecordState ??= newState());
}
function newState() {
  return { errors: new Set<string>(), examples: new Map<string, number>() };
}

/**
 * For the global setup (runs once per project, and for the root project, in the main process): one
 * directory for the whole run, shared by every project's setup, and a teardown that checks what was
 * recorded once the last project's teardown runs.
 */
export function openRouteRecords(provide: (dir: string) => void): () => Promise<void> {
  const holder = globalThis as { __remitRouteRecords?: { dir: string; keep: boolean; users: number } };
  const given = process.env.ROUTE_RECORDS_DIR;
  holder.__remitRouteRecords ??= given
    ? { dir: emptied(given), keep: true, users: 0 }
    : { dir: fs.mkdtempSync(path.join(os.tmpdir(), 'remit-route-records-')), keep: false, users: 0 };
  const state = holder.__remitRouteRecords;
  state.users += 1;
  provide(state.dir);
  return async () => {
    state.users -= 1;
    if (state.users > 0) return;
    delete holder.__remitRouteRecords;
    try {
      await finishRouteRecords(state.dir);
    } finally {
      if (!state.keep) fs.rmSync(state.dir, { recursive: true, force: true });
    }
  };
}

/** A directory of the caller's choosing, without the records of an earlier run. */
function emptied(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  for (const name of fs.readdirSync(dir)) if (name.endsWith('.jsonl')) fs.rmSync(path.join(dir, name));
  return dir;
}

export function readRouteRecords(dir: string): RouteRecord[] {
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .flatMap((name) =>
      fs
        .readFileSync(path.join(dir, name), 'utf8')
        .split('\n')
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as RouteRecord),
    );
}

/** Fails the run on an undeclared code; with RECORD_OPENAPI_EXAMPLES=1, writes the examples. */
export async function finishRouteRecords(dir: string): Promise<void> {
  const records = readRouteRecords(dir);
  const problems = undeclaredErrors(records);
  if (RECORD_EXAMPLES) await writeExamples(records);
  if (problems.length > 0) {
    process.exitCode = 1;
    const list = problems.map((line) => `  ${line}`).join('\n');
    console.error(
      `\nError codes answered during the run that their route does not declare (${problems.length}).\n` +
        'Declare each in the route’s `config.errors` (or fix the answer); docs/openapi.md#error-answers:\n' +
        `${list}\n`,
    );
    throw new Error(`${problems.length} error codes answered but not declared (listed above)`);
  }
}

/** `METHOD /route (operationId): status code`, sorted, for each error its route does not declare. */
export function undeclaredErrors(records: RouteRecord[]): string[] {
  const problems = new Set<string>();
  for (const record of records) {
    if (record.kind === 'failure') problems.add(`a record could not be made: ${record.message}`);
    if (record.kind !== 'error') continue;
    const declared =
      record.code !== null &&
      record.declared.includes(record.code) &&
      ERROR_CODES[record.code as ErrorCode] === record.status;
    if (!declared) {
      problems.add(
        `${record.route} (${record.operationId}): ${record.status} ${record.code ?? '(no error code in the body)'}`,
      );
    }
  }
  return [...problems].sort();
}

/**
 * Keeps, per operation, the best example of the run (examples of operations this run did not exercise
 * stay as they were), with secrets replaced, sorted by operationId so a refresh shows as a diff.
 */
export async function writeExamples(records: RouteRecord[]): Promise<void> {
  const file = path.join(packageRoot(), EXAMPLES_FILE);
  const examples: Record<string, RecordedExample> = fs.existsSync(file)
    ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, RecordedExample>)
    : {};
  const best = new Map<string, ExampleRecord>();
  for (const record of records) {
    if (record.kind !== 'example' || NO_EXAMPLE.has(record.operationId)) continue;
    const score = exampleScore(
      record.request === undefined ? undefined : JSON.stringify(record.request),
      JSON.stringify(record.response?.body),
    );
    const current = best.get(record.operationId);
    if (!current || score > current.score) best.set(record.operationId, { ...record, score });
  }
  for (const [operationId, { request, response }] of best) {
    examples[operationId] = sanitized({ ...(request !== undefined ? { request } : {}), response });
  }
  const sorted = Object.fromEntries(Object.entries(examples).sort(([a], [b]) => a.localeCompare(b)));
  // As `npm run lint` checks it (prettier --check .).
  const options = await prettier.resolveConfig(file);
  fs.writeFileSync(file, await prettier.format(JSON.stringify(sorted), { ...options, filepath: file }));
  console.log(
    `${EXAMPLES_FILE}: ${best.size} operations recorded by this run, ${Object.keys(sorted).length} in all`,
  );
}

/** Field names whose string values are secrets, whatever they look like. */
const SECRET_FIELD = /(password|secret|token|api_?key|authorization|signature|credential|totp_code|otpauth)/i;

/** Secrets recognised by their form, wherever they are (inside URLs and messages too). */
const SECRET_PATTERNS: [RegExp, (match: string, ...groups: string[]) => string][] = [
  // API keys, webhook signing secrets.
  [
    /\b(rk_(?:live|test)_)[A-Za-z0-9_-]+/g,
    (_m, prefix) => `${prefix}EXAMPLE0000000000000000000000000000000000`,
  ],
  [/\b(whsec_)[A-Za-z0-9+/=_-]+/g, (_m, prefix) => `${prefix}RVhBTVBMRUVYQU1QTEVFWEFNUExFRVhBTVBMRQ==`],
  // Presigned URLs and forms: the signature and the credential's key id.
  [/(X-Amz-(?:Signature|Credential|Security-Token)=)[^&"\s]+/gi, (_m, name) => `${name}EXAMPLE`],
  // Credentials in a URL (an SMTP account's address).
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]+:)[^@\s/]+@/gi, (_m, start) => `${start}EXAMPLE@`],
  // TOTP secrets in otpauth:// URIs.
  [/([?&]secret=)[A-Z2-7]+/g, (_m, name) => `${name}EXAMPLEEXAMPLEEXAMPLEEXAMPLE`],
];

/** A value of the same shape (length, letters, digits) with none of its characters. */
const placeholder = (value: string) =>
  value.replace(/[A-Z]/g, 'X').replace(/[a-z]/g, 'x').replace(/[0-9]/g, '0');

export function sanitized<T>(value: T, field = ''): T {
  if (typeof value === 'string') {
    let text: string = value;
    for (const [pattern, replace] of SECRET_PATTERNS) text = text.replace(pattern, replace as never);
    // A secret of a known form keeps its form (`whsec_…`); any other under a secret's name is replaced.
    if (text === value && SECRET_FIELD.test(field) && !/_(at|uid|id|count|prefix|snippet)$/.test(field)) {
      return placeholder(value) as T;
    }
    return text as T;
  }
  if (Array.isArray(value)) return value.map((item) => sanitized(item, field)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, sanitized(item, key)])) as T;
  }
  return value;
}
