import type { OpenAPIV3_2, SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';

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

/**
 * A public route (`config.public`: no credential is read, no rate limit) says so with `security: []`
 * unless its schema says otherwise; a wildcard route's last segment becomes `{key}`.
 */
export const documentRoute: SwaggerTransform = ({ schema, url, route }) => {
  let documented = schema;
  if (route.config?.public && documented?.security === undefined)
    documented = { ...documented, security: [] };
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

interface DocumentResponse {
  $ref?: string;
  description?: string;
  content?: Record<string, { schema?: { $ref?: string } }>;
  headers?: Record<string, unknown>;
}

interface DocumentOperation {
  security?: unknown[];
  parameters?: unknown[];
  responses?: Record<string, DocumentResponse>;
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

/**
 * Adds the shared headers to every operation of the finished document, from what the hooks do:
 * X-Request-Id on every request and response; on a route that is not public (its `security` is not
 * `[]`) the RateLimit-* headers on every response, and on its POSTs the Idempotency-Key header,
 * Idempotent-Replayed, and Original-Request on error answers; Retry-After on every 429.
 *
 * The error answers of a kind of operation are alike, so each kind's is one `components.responses`
 * entry that the operations reference (without them the document was more than twice the size).
 */
export const documentHeaders: SwaggerTransformObject = (documentObject) => {
  if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
  const { openapiObject } = documentObject;
  const document = openapiObject as {
    paths?: Record<string, Record<string, DocumentOperation>>;
    components?: { responses?: Record<string, DocumentResponse> };
  };
  const sharedResponses: Record<string, DocumentResponse> = {};
  for (const item of Object.values(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const rateLimited = !(Array.isArray(operation.security) && operation.security.length === 0);
      const idempotent = rateLimited && method === 'post';
      operation.parameters = [
        ...(operation.parameters ?? []),
        parameterRef('XRequestId'),
        ...(idempotent ? [parameterRef('IdempotencyKey')] : []),
      ];
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (response.$ref) continue;
        const isError = /^[45]/.test(status);
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
        if (isError && isPlainErrorBody(response)) {
          const name = `${status === '429' ? 'RateLimited' : 'Error'}${
            idempotent ? 'OnIdempotentPost' : rateLimited ? 'OnAuthenticatedRoute' : 'OnPublicRoute'
          }`;
          sharedResponses[name] ??= {
            description:
              status === '429'
                ? 'Too many requests: the error body (docs/errors.md); retry after Retry-After seconds'
                : 'The error body (docs/errors.md): `code` says what went wrong',
            content: response.content!,
            headers,
          };
          operation.responses![status] = { $ref: `#/components/responses/${name}` };
        } else {
          response.headers = headers;
        }
      }
    }
  }
  document.components = {
    ...document.components,
    responses: { ...document.components?.responses, ...sortedByKey(sharedResponses) },
  };
  return openapiObject;
};

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
    name: 'Storage',
    description:
      'The embedded object store’s S3-compatible download and upload endpoints, reached through presigned URLs and forms (docs/storage.md).',
  },
];
