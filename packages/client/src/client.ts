import createClient, {
  type Client,
  type ClientPathsWithMethod,
  type MaybeOptionalInit,
  type MethodResponse,
} from 'openapi-fetch';
import { RemitApiError } from './errors.ts';
import type { paths } from './schema.ts';

/**
 * A person's sign-in session: the anti-forgery token answered by sign-in (or `GET /api/auth/session`),
 * and the session cookie as `name=value`. In a browser leave `cookie` out: the browser sends its own, and
 * a page cannot set the header anyway.
 */
export interface RemitSession {
  csrfToken: string;
  cookie?: string | undefined;
}

interface CommonOptions {
  /** The server's origin, e.g. `https://remit.example.com` (paths in the types start with `/api/…`). */
  baseUrl: string;
  /** Retries after the first attempt, on 429 and 503 (and network errors where safe). Default 3. */
  maxRetries?: number;
  /**
   * The longest wait before a retry. A `Retry-After` asking for more is not waited for: the 429 or 503
   * is thrown at once as a `RemitApiError` carrying `retryAfterS`. Default 60 s.
   */
  maxRetryDelayMs?: number;
  /** How to wait before a retry (tests pass one that returns at once). Default: a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock, in epoch milliseconds, for a `Retry-After` given as an HTTP date. Default `Date.now`. */
  now?: () => number;
  /** The fetch to send with. Default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>;
}

/** An API key (`rk_live_…`), a sign-in session, or neither (public routes such as sign-in). */
export type RemitClientOptions = CommonOptions &
  (
    | { apiKey: string; session?: undefined }
    | { session: RemitSession; apiKey?: undefined }
    | { apiKey?: undefined; session?: undefined }
  );

type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';
type PathsWith<M extends Method> = ClientPathsWithMethod<Client<paths>, M>;

// openapi-fetch's rule for its second argument (required when the operation has required parameters or
// a required body), restated because openapi-fetch does not export it.
type RequiredKeysOfHelper<T> = { [K in keyof T]: object extends Pick<T, K> ? never : K }[keyof T];
type RequiredKeysOf<T> = RequiredKeysOfHelper<T> extends undefined ? never : RequiredKeysOfHelper<T>;
type InitParam<Init> =
  RequiredKeysOf<Init> extends never
    ? [(Init & { [key: string]: unknown })?]
    : [Init & { [key: string]: unknown }];

/** What a successful call answers (its JSON body): `SuccessBody<'get', '/api/parties/{uid}'>`. */
export type SuccessBody<
  M extends Method,
  P extends PathsWith<M>,
  Init = MaybeOptionalInit<paths[P], M>,
> = MethodResponse<Client<paths>, M, P, Init>;

type DataMethod<M extends Method> = <P extends PathsWith<M>, Init extends MaybeOptionalInit<paths[P], M>>(
  url: P,
  ...init: InitParam<Init>
) => Promise<SuccessBody<M, P, Init>>;

type ItemsOf<Body> = Body extends { items: readonly (infer Item)[] }
  ? Item
  : Body extends { data: { items: readonly (infer Item)[] } }
    ? Item
    : never;

/** A paged list: its answer has `items` and `_meta`, at the top level or inside `data`. */
export type ListPath = {
  [P in PathsWith<'get'>]: [ItemsOf<SuccessBody<'get', P>>] extends [never] ? never : P;
}[PathsWith<'get'>];

/** The item type of a paged list. */
export type ListItem<P extends ListPath> = ItemsOf<SuccessBody<'get', P>>;

export interface RemitClient {
  /** Each answers the success body, or throws `RemitApiError` (after retries). */
  GET: DataMethod<'get'>;
  POST: DataMethod<'post'>;
  PUT: DataMethod<'put'>;
  PATCH: DataMethod<'patch'>;
  DELETE: DataMethod<'delete'>;
  /**
   * Every item of a paged list, fetched a page at a time as the loop asks for more. Takes the list's
   * options (path, filters, `per_page`; `page` to start elsewhere than 1).
   */
  paginate<P extends ListPath>(
    url: P,
    ...init: InitParam<MaybeOptionalInit<paths[P], 'get'>>
  ): AsyncGenerator<ListItem<P>, void, undefined>;
  /**
   * The openapi-fetch client underneath, with the same authentication, idempotency keys and retries: it
   * answers `{ data, error, response }` instead of throwing, for callers who want the response's headers.
   */
  raw: Client<paths>;
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** A network error is retried only where a repeat cannot do a thing twice: reads, and POST (its key). */
const RETRY_ON_NETWORK_ERROR = new Set(['GET', 'HEAD', 'POST']);
/** Answers given before anything was done (429) or after it was rolled back (503; docs/errors.md). */
const RETRY_STATUSES = new Set([429, 503]);
const FIRST_BACKOFF_MS = 500;

const timerSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A client for one server and one credential. */
export function createRemitClient(options: RemitClientOptions): RemitClient {
  const raw = createClient<paths>({ baseUrl: options.baseUrl, fetch: transport(options) });

  async function unwrap(
    method: string,
    call: Promise<{ data?: unknown; error?: unknown; response: Response }>,
  ) {
    const { data, error, response } = await call;
    if (!response.ok) throw RemitApiError.fromResponse(response, error, method);
    return data;
  }

  // openapi-fetch's methods are typed per path; the wrappers pass their arguments through unchanged.
  type Untyped = (
    url: string,
    init?: object,
  ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
  const wrap = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE') => {
    const send = raw[method] as unknown as Untyped;
    return ((url: string, init?: object) => unwrap(method, send(url, init))) as never;
  };
  const getUntyped = raw.GET as unknown as Untyped;

  async function* paginate(url: string, init: { params?: { query?: Record<string, unknown> } } = {}) {
    const start = init.params?.query?.page;
    for (let page = typeof start === 'number' ? start : 1; ; page++) {
      const body = (await unwrap(
        'GET',
        getUntyped(url, { ...init, params: { ...init.params, query: { ...init.params?.query, page } } }),
      )) as PageBody;
      const list = 'items' in body ? body : body.data;
      yield* list.items;
      if (list.items.length === 0 || page >= list._meta.total_pages) return;
    }
  }

  return {
    GET: wrap('GET'),
    POST: wrap('POST'),
    PUT: wrap('PUT'),
    PATCH: wrap('PATCH'),
    DELETE: wrap('DELETE'),
    paginate: paginate as RemitClient['paginate'],
    raw,
  };
}

interface PageOfItems {
  items: unknown[];
  _meta: { page: number; per_page: number; total_pages: number; total_items: number };
}
type PageBody = PageOfItems | { data: PageOfItems };

/**
 * The fetch openapi-fetch sends with: adds the credential, an `Idempotency-Key` to every POST without one,
 * and retries 429 and 503 (honoring `Retry-After`) and network errors where safe. Every attempt of a
 * request carries the same headers, so a POST's retries carry the same key: the server runs it once.
 */
function transport(options: RemitClientOptions): (request: Request) => Promise<Response> {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const maxRetries = options.maxRetries ?? 3;
  const maxDelayMs = options.maxRetryDelayMs ?? 60_000;
  const sleep = options.sleep ?? timerSleep;
  const now = options.now ?? Date.now;

  const delayOf = (retryAfter: string | null, attempt: number): number => {
    if (retryAfter !== null) {
      if (/^\d+$/.test(retryAfter.trim())) return Number(retryAfter.trim()) * 1000;
      const at = Date.parse(retryAfter);
      if (!Number.isNaN(at)) return Math.max(0, at - now());
    }
    return Math.min(FIRST_BACKOFF_MS * 2 ** attempt, maxDelayMs);
  };

  return async (request) => {
    const method = request.method.toUpperCase();
    const headers = new Headers(request.headers);
    if (options.apiKey !== undefined) {
      headers.set('authorization', `Bearer ${options.apiKey}`);
    } else if (options.session !== undefined) {
      if (options.session.cookie) headers.set('cookie', options.session.cookie);
      if (UNSAFE_METHODS.has(method)) headers.set('x-csrf-token', options.session.csrfToken);
    }
    if (method === 'POST' && !headers.has('idempotency-key')) {
      headers.set('idempotency-key', crypto.randomUUID());
    }
    // Read once: a body stream cannot be sent twice.
    const body = request.body === null ? undefined : await request.arrayBuffer();

    for (let attempt = 0; ; attempt++) {
      const attemptRequest = new Request(request.url, {
        method,
        headers,
        body,
        signal: request.signal,
        redirect: request.redirect,
        credentials: request.credentials,
      });
      let response: Response;
      try {
        response = await send(attemptRequest);
      } catch (error) {
        if (request.signal.aborted || attempt >= maxRetries || !RETRY_ON_NETWORK_ERROR.has(method)) {
          throw error;
        }
        await sleep(delayOf(null, attempt));
        request.signal.throwIfAborted();
        continue;
      }
      if (!RETRY_STATUSES.has(response.status) || attempt >= maxRetries) return response;
      const delay = delayOf(response.headers.get('retry-after'), attempt);
      if (delay > maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(delay);
      request.signal.throwIfAborted();
    }
  };
}

/**
 * Signs in with a password (and the authenticator's code when the account has a second factor) and
 * answers the session to pass to `createRemitClient({ baseUrl, session })`, the user, and the session's
 * resource (`sessionInfo`: its uid, expiry, …). Throws `RemitApiError` (`invalid_credentials`, `second_factor_missing`, `rate_limited`, …).
 */
export async function signIn(
  baseUrl: string,
  credentials: { email: string; password: string; totp_code?: string },
  options: Omit<CommonOptions, 'baseUrl'> = {},
) {
  const client = createRemitClient({ ...options, baseUrl });
  const { data, error, response } = await client.raw.POST('/api/auth/sign-in', { body: credentials });
  if (!data) throw RemitApiError.fromResponse(response, error, 'POST');
  // Outside a browser the cookie is ours to keep; a browser keeps it itself and hides Set-Cookie.
  const setCookies =
    typeof response.headers.getSetCookie === 'function' ? response.headers.getSetCookie() : [];
  const cookie = setCookies
    .map((line) => line.split(';')[0]!)
    .find((pair) => /^(__Host-)?remit_session=/.test(pair));
  const session: RemitSession = { csrfToken: data.data.csrf_token, cookie };
  return { session, user: data.data.user, sessionInfo: data.data.session };
}
