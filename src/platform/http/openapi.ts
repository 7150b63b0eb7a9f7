import fs from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OpenAPIV3_2, SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { ERROR_CODES, type ErrorCode } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The error codes this route's handler and services answer, besides those every route of its kind
     * answers (`errorCodesOf`): the route's part of the registry of error codes.
     */
    errors?: readonly ErrorCode[];
  }
}

// How routes become the OpenAPI document's operations (docs/openapi.md). The transform sees each route
// with its options and returns what the document shows; it never changes the route itself (its schema
// objects are the ones Fastify validates and serializes with: copies only).

/**
 * OpenAPI has no wildcard path segment: a route ending in `/*` (the embedded store's downloads,
 * `/storage/:bucket/*`) is documented as ending in `/{key}`, and its `*` parameter as `key`: the rest of
 * the path, which may hold `/`.
 */
const WILDCARD_PARAMETER = 'key';

interface ObjectSchema {
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}

function renameWildcard(params: ObjectSchema): ObjectSchema {
  const { '*': wildcard, ...others } = params.properties ?? {};
  return {
    ...params,
    properties: { ...others, [WILDCARD_PARAMETER]: wildcard ?? { type: 'string' } },
    required: [...(params.required ?? []).filter((name) => name !== '*'), WILDCARD_PARAMETER],
  };
}

/** Where a route's error codes travel from `documentRoute` to `documentHeaders` (removed there). */
const ERROR_CODES_KEY = 'x-remit-error-codes';
/** A POST that ignores Idempotency-Key (`config.idempotency: 'none'`): no key parameter, no replay. */
const NO_IDEMPOTENCY_KEY = 'x-remit-no-idempotency';

/**
 * A public route (`config.public`: no credential is read, no rate limit) says so with `security: []`
 * unless its schema says otherwise; a scoped route (`config.scope`) lists its scope under `bearerAuth`; a wildcard route's last segment becomes `{key}`. The route's error
 * codes (`errorCodesOf`) ride along for `documentHeaders`, which turns them into its error answers.
 */
export const documentRoute: SwaggerTransform = ({ schema, url, route }) => {
  const method = Array.isArray(route.method) ? String(route.method[0]) : String(route.method);
  let documented = {
    ...schema,
    [ERROR_CODES_KEY]: errorCodesOf({
      method,
      url,
      schema,
      config: route.config,
      errorHandler: route.errorHandler,
    }),
    ...(route.config?.idempotency === 'none' ? { [NO_IDEMPOTENCY_KEY]: true } : {}),
  };
  if (route.config?.public && documented.security === undefined) documented = { ...documented, security: [] };
  // A scoped route names its scope: a key needs it (OpenAPI 3.1 lists required roles of any scheme
  // this way); a sign-in session has no scopes, its role decides (docs/authentication.md#scopes).
  const scope = route.config?.scope;
  if (typeof scope === 'string' && documented.security === undefined) {
    documented = { ...documented, security: [{ bearerAuth: [scope] }, { sessionCookie: [] }] };
  }
  if (!url.endsWith('/*')) return { schema: documented, url };
  return {
    url: `${url.slice(0, -1)}:${WILDCARD_PARAMETER}`,
    schema: { ...documented, params: renameWildcard((documented.params ?? {}) as ObjectSchema) },
  };
};

/**
 * The headers every operation shares, defined once and referenced by each operation
 * (`documentHeaders`). Where they are sent: src/app.ts (X-Request-Id), auth.ts (RateLimit-*,
 * Retry-After), idempotency.ts (Idempotency-Key, Original-Request), error-handler.ts (Retry-After).
 */
type HeaderName =
  | 'X-Request-Id'
  | 'RateLimit-Limit'
  | 'RateLimit-Remaining'
  | 'RateLimit-Reset'
  | 'Retry-After'
  | 'Idempotent-Replayed'
  | 'Original-Request';
type ParameterName = 'XRequestId' | 'IdempotencyKey';
type Components = NonNullable<OpenAPIV3_2.Document['components']>;

export const sharedHeaderComponents: Required<Pick<Components, 'headers' | 'parameters'>> = {
  headers: {
    'X-Request-Id': {
      description:
        'The request’s id: the X-Request-Id sent when it is 1–128 letters, digits, `_`, `.`, `:` or `-`, else a new UUID. Error bodies carry it as `request_id`; quote it when reporting a problem.',
      schema: { type: 'string' },
    },
    'RateLimit-Limit': {
      description:
        'Requests allowed per window to this credential (a key, or a person’s sessions together; unauthenticated attempts count against the client address).',
      schema: { type: 'integer', minimum: 0 },
    },
    'RateLimit-Remaining': {
      description: 'Requests left in the current window.',
      schema: { type: 'integer', minimum: 0 },
    },
    'RateLimit-Reset': {
      description: 'Seconds until the current window ends.',
      schema: { type: 'integer', minimum: 0 },
    },
    'Retry-After': {
      description: 'Seconds to wait before trying again.',
      schema: { type: 'integer', minimum: 0 },
    },
    'Idempotent-Replayed': {
      description:
        '`true` on an answer replayed for an Idempotency-Key instead of running the request again.',
      schema: { type: 'string', enum: ['true'] },
    },
    'Original-Request': {
      description:
        'On an error replayed for an Idempotency-Key: the id of the first request, whose body this is.',
      schema: { type: 'string' },
    },
  },
  parameters: {
    XRequestId: {
      name: 'X-Request-Id',
      in: 'header',
      required: false,
      description:
        'An id of your own for this request (1–128 letters, digits, `_`, `.`, `:` or `-`): answered in the X-Request-Id header and logged; otherwise the server makes one.',
      schema: { type: 'string', pattern: '^[\\w.:-]{1,128}$' },
    },
    IdempotencyKey: {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes a retry safe: the same key with the same body within 24 hours replays the first answer instead of running again; another body → 422, the first still running → 409 (docs/errors.md#idempotency-key).',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    },
  },
};

const headerRef = (name: HeaderName) => ({
  $ref: `#/components/headers/${name}`,
});
const parameterRef = (name: ParameterName) => ({
  $ref: `#/components/parameters/${name}`,
});

interface MediaType {
  schema?: { $ref?: string; [key: string]: unknown };
  examples?: Record<string, { summary?: string; value: unknown }>;
}

interface DocumentResponse {
  $ref?: string;
  description?: string;
  content?: Record<string, MediaType>;
  headers?: Record<string, unknown>;
}

interface DocumentOperation {
  operationId?: string;
  security?: unknown[];
  parameters?: unknown[];
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, DocumentResponse>;
  [ERROR_CODES_KEY]?: ErrorCode[];
  [NO_IDEMPOTENCY_KEY]?: boolean;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];
const ERROR_BODY_REF = '#/components/schemas/ErrorBody';

/** A response that is the one error body and nothing else (`ErrorRef` in a route's `response`). */
function isPlainErrorBody(response: DocumentResponse): boolean {
  const media = Object.keys(response.content ?? {});
  return (
    media.length === 1 &&
    response.content!['application/json']?.schema?.$ref === ERROR_BODY_REF &&
    response.headers === undefined
  );
}

/** One status's answer: the error body, its `code` one of `codes`, each described. */
function errorAnswer(status: number, codes: ErrorCode[]): DocumentResponse {
  return {
    description:
      `${STATUS_CODES[status] ?? 'Error'}: the error body (docs/errors.md); \`code\` is one of\n\n` +
      codes.map((code) => `- \`${code}\`: ${ERROR_CODE_MEANINGS[code]}`).join('\n'),
    content: {
      'application/json': {
        schema: {
          allOf: [
            { $ref: ERROR_BODY_REF },
            { type: 'object', required: ['code'], properties: { code: { type: 'string', enum: codes } } },
          ],
        },
      },
    },
  };
}

/**
 * Replaces the generic error answers of a route's schema (`errorResponses`: every status, any code) by
 * one answer per status of its registry codes. A status the route answers with a body of its own (the
 * embedded store's S3 XML errors) keeps it. Returns the statuses answered from the registry.
 */
function documentErrors(operation: DocumentOperation, codes: ErrorCode[]): Map<string, ErrorCode[]> {
  const responses = (operation.responses ??= {});
  for (const [status, response] of Object.entries(responses)) {
    if (/^[45]/.test(status) && isPlainErrorBody(response)) delete responses[status];
  }
  const byStatus = new Map<string, ErrorCode[]>();
  for (const code of codes) {
    const status = String(ERROR_CODES[code]);
    if (responses[status] && !byStatus.has(status)) continue;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, list] of byStatus) responses[status] = errorAnswer(Number(status), list);
  return byStatus;
}

/** `not_found` → `NotFound`, `createParty` → `CreateParty`. */
const pascalCase = (name: string) =>
  name
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');

/**
 * Builds what the document says beyond each route's schema, once the routes are converted:
 *
 * - **Error answers** from the registry of error codes (`errorCodesOf`): one per status, its `code`
 *   restricted to that route's codes of that status. Alike answers are one `components.responses` entry
 *   that the operations reference, named after their codes and the kind of route
 *   (`NotFoundOnAuthenticatedRoute`): written out per operation the document was twice the size.
 * - **Shared headers**, from what the hooks do: X-Request-Id on every request and response; on a route
 *   that is not public (its `security` is not `[]`) the RateLimit-* headers on every response, and on its
 *   POSTs the Idempotency-Key header, Idempotent-Replayed, and Original-Request on error answers;
 *   Retry-After on every 429.
 * - **Examples** recorded from the test suite (docs/openapi-examples.json), on the request body and the
 *   success answer of each operation that has one.
 */
export const documentHeaders: SwaggerTransformObject = (documentObject) => {
  if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
  const { openapiObject } = documentObject;
  const document = openapiObject as {
    paths?: Record<string, Record<string, DocumentOperation>>;
    components?: { responses?: Record<string, DocumentResponse>; schemas?: Record<string, unknown> };
  };
  const examples = readExamples();
  const sharedResponses: Record<string, DocumentResponse> = {};
  const requestBodies: Record<string, unknown> = {};
  for (const item of Object.values(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const rateLimited = !(Array.isArray(operation.security) && operation.security.length === 0);
      const idempotent = rateLimited && method === 'post' && !operation[NO_IDEMPOTENCY_KEY];
      delete operation[NO_IDEMPOTENCY_KEY];
      const codes = operation[ERROR_CODES_KEY];
      delete operation[ERROR_CODES_KEY];
      const fromRegistry = codes ? documentErrors(operation, codes) : new Map<string, ErrorCode[]>();
      const example = operation.operationId ? examples[operation.operationId] : undefined;
      if (example) addExample(operation, example);
      nameRequestBody(operation, requestBodies);
      operation.parameters = [
        ...(operation.parameters ?? []),
        parameterRef('XRequestId'),
        ...(idempotent ? [parameterRef('IdempotencyKey')] : []),
      ];
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (response.$ref) continue;
        const isError = /^[45]/.test(status);
        if (response.description === 'Default Response') {
          response.description = STATUS_CODES[Number(status)] ?? response.description;
        }
        const headers = {
          ...response.headers,
          'X-Request-Id': headerRef('X-Request-Id'),
          ...(rateLimited
            ? {
                'RateLimit-Limit': headerRef('RateLimit-Limit'),
                'RateLimit-Remaining': headerRef('RateLimit-Remaining'),
                'RateLimit-Reset': headerRef('RateLimit-Reset'),
              }
            : {}),
          ...(status === '429' ? { 'Retry-After': headerRef('Retry-After') } : {}),
          ...(idempotent ? { 'Idempotent-Replayed': headerRef('Idempotent-Replayed') } : {}),
          ...(idempotent && isError ? { 'Original-Request': headerRef('Original-Request') } : {}),
        };
        const registryCodes = fromRegistry.get(status);
        if (registryCodes) {
          const name = `${registryCodes.map(pascalCase).join('Or')}${
            idempotent ? 'OnIdempotentPost' : rateLimited ? 'OnAuthenticatedRoute' : 'OnPublicRoute'
          }`;
          sharedResponses[name] ??= { ...response, headers };
          operation.responses![status] = { $ref: `#/components/responses/${name}` };
        } else {
          response.headers = headers;
        }
      }
    }
  }
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, ...sortedByKey(requestBodies) },
    responses: { ...document.components?.responses, ...sortedByKey(sharedResponses) },
  };
  return openapiObject;
};

/**
 * A JSON request body becomes a named component schema, `<OperationId>Body` (`CreatePartyBody`), so
 * that generated clients have a name for it instead of an anonymous type inside the operation.
 */
function nameRequestBody(operation: DocumentOperation, named: Record<string, unknown>): void {
  const media = operation.requestBody?.content?.['application/json'];
  if (!media?.schema || media.schema.$ref || !operation.operationId) return;
  const name = `${pascalCase(operation.operationId)}Body`;
  named[name] = media.schema;
  media.schema = { $ref: `#/components/schemas/${name}` };
}

/** One operation's examples as recorded by the test suite (test/helpers/route-records.ts). */
export interface RecordedExample {
  /** A JSON request body the operation accepted. */
  request?: unknown;
  /** The success answer to it. */
  response?: { status: number; body: unknown };
}

/** Recorded examples by operationId, beside the code (read when the document is first built). */
export const EXAMPLES_FILE = 'docs/openapi-examples.json';

/** The package's root: the directory above this file (src/… or a dist/ chunk) that holds package.json. */
export function packageRoot(from = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/** The recorded examples; none when the file is absent (a copy of the service without its docs). */
function readExamples(): Record<string, RecordedExample> {
  try {
    return JSON.parse(fs.readFileSync(path.join(packageRoot(), EXAMPLES_FILE), 'utf8')) as Record<
      string,
      RecordedExample
    >;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
}

function addExample(operation: DocumentOperation, example: RecordedExample): void {
  const request = operation.requestBody?.content?.['application/json'];
  if (request && example.request !== undefined) {
    request.examples = { fromTests: { summary: 'A request the test suite sent', value: example.request } };
  }
  const answer = example.response && operation.responses?.[String(example.response.status)];
  const media = answer?.content?.['application/json'];
  if (media && example.response) {
    media.examples = { fromTests: { summary: 'The answer it got', value: example.response.body } };
  }
}

function sortedByKey<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The document's tags, one per domain, in the order the docs page shows them. An operation's tag must
 * be one of these (test/platform/openapi-document.test.ts); a new domain adds its tag here.
 */
export const API_TAGS = [
  { name: 'System', description: 'Liveness, readiness and this document. No key needed.' },
  { name: 'Account', description: 'Who is calling: the user, their organizations and the key’s scopes.' },
  {
    name: 'Sign-in',
    description:
      'People in a browser: sessions, passwords, emailed links and the TOTP second factor (docs/people.md).',
  },
  { name: 'API keys', description: 'Keys for programs, with their scopes (docs/authentication.md).' },
  { name: 'Members and invitations', description: 'Who belongs to an organization, and in which role.' },
  { name: 'Organization', description: 'An organization’s settings: segregation of duties, second factor.' },
  { name: 'Parties', description: 'Clients and vendors.' },
  { name: 'Products', description: 'The catalog line items are resolved from, by SKU.' },
  {
    name: 'Invoices',
    description:
      'Receivable and payable invoices with their line items, comments, payments and attachments, and the AR/AP lists (docs/invoices.md).',
  },
  {
    name: 'Billing integration',
    description: 'The billing partner invoice updates are synced to (docs/billing-integration.md).',
  },
  { name: 'Email', description: 'Collections email: accounts, templates and drafts (docs/email.md).' },
  {
    name: 'Work tasks',
    description: 'Tasks for people and human-in-the-loop approvals (docs/work-tasks.md).',
  },
  { name: 'Agents', description: 'Agents and their configuration (docs/agents.md).' },
  {
    name: 'Approval policies',
    description:
      'Who may decide an agent’s approvals, how many must agree, expiry and escalation (docs/approvals.md).',
  },
  { name: 'Agent runs', description: 'Runs of an agent, their activities and notifications.' },
  { name: 'Conversations', description: 'Conversations with parties, and inbound email.' },
  {
    name: 'Knowledge',
    description: 'Knowledge documents: presigned upload, processing (docs/knowledge.md).',
  },
  { name: 'Documents', description: 'Stored documents with presigned downloads.' },
  { name: 'Metrics', description: 'Metric definitions and their values (docs/metrics.md).' },
  { name: 'Search', description: 'Search and type-ahead across the organization (docs/search.md).' },
  { name: 'Audit log', description: 'Who changed what, for admins (docs/audit-log.md).' },
  {
    name: 'Webhooks',
    description:
      'Endpoints that receive signed events, their delivery log, and the events of the last 30 days (docs/webhooks.md).',
  },
  {
    name: 'Slack',
    description:
      'Slack’s interactivity endpoint: approval buttons and the reject modal, signed by Slack (docs/slack.md).',
  },
  {
    name: 'Storage',
    description:
      'The embedded object store’s S3-compatible download and upload endpoints, reached through presigned URLs and forms (docs/storage.md).',
  },
];

/**
 * What each error code means, in a line: the description of every documented error answer lists the
 * codes it may carry with these (docs/errors.md has the full table).
 */
const ERROR_CODE_MEANINGS: Record<ErrorCode, string> = {
  bad_request:
    'a malformed request: a Content-Length that does not match the body, or a path that is not a valid URL',
  invalid_json: 'the body is not valid JSON',
  invalid_parameter:
    'a path or query parameter (or the Idempotency-Key header) fails its rules; `errors` names it',
  invalid_token: 'the emailed link’s token is not one we issued, or a newer link replaced it',
  unknown_parameter: 'a query parameter this operation does not take; the message lists those it does',
  unauthorized: 'no valid API key or session: missing, malformed, unknown, expired or revoked',
  invalid_credentials: 'the email and password (or the TOTP code) are not right',
  second_factor_missing: 'the password was right and the account has a second factor: send `totp_code` too',
  invalid_signature:
    "a request to Slack's interactivity endpoint that Slack did not sign with the app's signing secret, is older than five minutes, or was received before",
  forbidden: 'the caller’s role or key may not do this here',
  not_a_member: 'an `organization_uid` of an organization the caller does not belong to',
  missing_scope: 'the key lacks this operation’s scope, or the caller’s role does not allow it',
  csrf_failed: 'a session request without the X-CSRF-Token, or from another site',
  second_factor_required: 'the organization requires its admins to sign in with a second factor',
  not_an_approver: 'the approval’s policy names other approvers (roles or people) than the caller',
  initiator_cannot_approve: 'the approval’s policy bars the person who started it from approving it',
  session_required: 'only a person signed in (a session) may do this, not an API key',
  approval_limit_exceeded:
    'the invoice’s total is over the caller’s approval limit (the organization’s setting); `details` names it',
  not_found: 'no such resource in the caller’s organizations (or one the caller may not see)',
  route_not_found: 'no route has this path',
  method_not_allowed: 'the path exists, but not with this method',
  request_timeout: 'the request was not received in time',
  conflict: 'the resource changed meanwhile; send the request again',
  already_exists: 'a duplicate of something that must be unique',
  already_resolved: 'the approval was already decided',
  already_approved: 'the caller already approved this; the policy needs approvals from other people',
  approval_expired: 'the approval passed its policy’s deadline: nobody decides it any more',
  approval_changed:
    'the approval’s arguments changed after the args_revision sent with the decision; nothing was decided, `details` has the new revision, what changed and the arguments now',
  invalid_state: 'the resource’s current state does not allow this',
  run_claimed: 'the agent run is already running under another claim (the message names who holds it)',
  claim_mismatch: 'the claim token is not the agent run’s current claim (another holder, or a lapsed lease)',
  idempotency_key_in_use: 'the first request with this Idempotency-Key is still running',
  sync_in_progress: 'another update of this invoice is with the billing partner; retry in a moment',
  invalid_transition:
    'the invoice’s lifecycle does not allow this status next; message and `details` name the allowed ones',
  party_archived: 'the party named is archived: unarchive it to put it on an invoice',
  token_used: 'the emailed link was already used',
  token_expired: 'the emailed link (or the invitation) has expired',
  payload_too_large: 'the body (or an uploaded file) is over this operation’s limit',
  uri_too_long: 'a path parameter is longer than 100 characters',
  unsupported_media_type: 'a Content-Type this operation does not take',
  validation_failed: 'the body fails its schema or a rule of the service; `errors` names the field',
  idempotency_key_reused: 'this Idempotency-Key was used before with another body',
  rate_limited: 'too many requests: retry after Retry-After seconds',
  headers_too_large: 'the request headers are over 16 KiB',
  internal_error: 'something unexpected; quote `request_id` when reporting it',
  storage_full: 'the server’s disk is nearly full: writes are refused, reads go on',
  bad_gateway: 'an outside service (billing partner, Slack, mail) refused or failed; nothing was saved',
  service_unavailable: 'the database did not answer in time, or this server is shutting down; safe to retry',
  gateway_timeout: 'an outside service did not answer in time; nothing was saved',
};

const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What the registry reads of a route: its options as Fastify holds them (`route` or `routeOptions`). */
export interface RouteErrorSource {
  method: string;
  url: string;
  schema?: { body?: unknown } | undefined;
  /** A route-level error handler: the route answers its errors in a body of its own. */
  errorHandler?: unknown;
  config?:
    | {
        public?: boolean;
        optionalAuth?: boolean;
        scope?: string;
        sessionOnly?: boolean;
        errors?: readonly ErrorCode[];
        idempotency?: string;
      }
    | undefined;
}

/**
 * The registry of error codes: every code `method url` can answer, in ERROR_CODES order. It is the codes
 * every route of its kind answers (below: the hooks, parsers and validators that produce them) and
 * those its own options declare (`config.errors`, what its handler and services throw). The OpenAPI
 * document lists exactly these per operation, and the test suite fails on a code a route answered that
 * is not here (test/helpers/route-records.ts, docs/openapi.md#error-answers).
 */
export function errorCodesOf(route: RouteErrorSource): ErrorCode[] {
  const method = route.method.toUpperCase();
  const config = route.config ?? {};
  const codes = new Set<ErrorCode>();
  const add = (...more: ErrorCode[]) => more.forEach((code) => codes.add(code));
  const ordered = () => (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => codes.has(code));
  // The router refuses over-long or undecodable segments before any route is reached.
  const params = /[:*]/.test(route.url);
  if (params) add('bad_request', 'uri_too_long');
  // A route with an error handler of its own (the embedded store's upload answers S3's XML errors)
  // answers everything else itself, as its schema documents.
  if (route.errorHandler) return ordered();
  // The error handler's last resort, and the statement timeouts, lost connections and shutdown.
  add('internal_error', 'service_unavailable');
  if (WRITE_METHODS.has(method)) {
    // The disk guard refuses writes before their body is read; then the body parsers (the JSON parser
    // also refuses nesting past MAX_JSON_DEPTH with `validation_failed`, json-body.ts).
    add(
      'storage_full',
      'invalid_json',
      'bad_request',
      'payload_too_large',
      'unsupported_media_type',
      'validation_failed',
    );
  }
  if (route.schema?.body !== undefined) add('validation_failed');
  if (params) add('invalid_parameter');
  // Every /api/ route refuses unknown query parameters and checks `organization_uid` (applyQueryRules).
  const api = route.url.startsWith('/api/');
  if (api) add('unknown_parameter', 'invalid_parameter');
  if (!config.public) {
    // auth.ts: a credential that does not authenticate, the rate limit, cross-site session requests.
    add('unauthorized', 'rate_limited');
    if (WRITE_METHODS.has(method)) add('csrf_failed');
    // An explicit `organization_uid` is checked on every /api/ route (src/app.ts).
    if (api) add('not_a_member');
    // A scoped route acts in an organization (request.tenant): the key's scope, the role, the
    // organization's second-factor rule for admins.
    if (config.scope) add('missing_scope', 'second_factor_required');
    if (config.sessionOnly) add('session_required');
    // idempotency.ts: a malformed key, a key still running, a key used with another body.
    if (method === 'POST' && config.idempotency !== 'none') {
      add('invalid_parameter', 'idempotency_key_in_use', 'idempotency_key_reused');
    }
  }
  add(...(config.errors ?? []));
  return ordered();
}
