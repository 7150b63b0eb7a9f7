import { createRemitClient, RemitApiError, type RemitClient, type components } from '@remit/client';

export type WorkTask = components['schemas']['WorkTask'];
export type Invoice = components['schemas']['Invoice'];
export type Message = components['schemas']['Message'];
export type Member = components['schemas']['Member'];
export { RemitApiError, type RemitClient };

/**
 * For the pages used before signing in (sign-in, reset, invitation). No retries: a throttled sign-in
 * is told how long to wait instead of waiting in silence.
 */
export const publicClient = createRemitClient({ baseUrl: window.location.origin, maxRetries: 0 });

/**
 * The signed-in client: the browser sends the session cookie on its own, the client adds the session's
 * anti-forgery token to every write (docs/people.md#cross-site-requests). `onSessionEnded` hears a 401,
 * which means the session expired, was revoked or signed out elsewhere.
 */
export function sessionClient(csrfToken: string, onSessionEnded: () => void): RemitClient {
  return createRemitClient({
    baseUrl: window.location.origin,
    session: { csrfToken },
    maxRetries: 2,
    // Longer waits are shown to the person (the error says when to try again) rather than slept through.
    maxRetryDelayMs: 5_000,
    fetch: async (request) => {
      const response = await fetch(request);
      if (response.status === 401 && (await endsSession(response))) onSessionEnded();
      return response;
    },
  });
}

/**
 * A 401 means the session is over, except `invalid_credentials`: a wrong current password or code typed
 * on a signed-in page (changing the password, turning the second factor off) leaves the session as it was.
 */
async function endsSession(response: Response): Promise<boolean> {
  const body: unknown = await response
    .clone()
    .json()
    .catch(() => undefined);
  return !(
    typeof body === 'object' &&
    body !== null &&
    'code' in body &&
    body.code === 'invalid_credentials'
  );
}

/** The code of an API error, or undefined for anything else (a network failure). */
export const codeOf = (error: unknown): string | undefined =>
  error instanceof RemitApiError ? error.code : undefined;

/** A sentence for a person: the API's own message, or what a network failure means. */
export function problemOf(error: unknown): string {
  if (error instanceof RemitApiError) {
    if (error.code === 'rate_limited' && error.retryAfterS !== undefined) {
      return `Too many attempts. Try again in ${waitOf(error.retryAfterS)}.`;
    }
    if (error.code === 'unexpected_response') return `Remit answered ${error.message}. Try again.`;
    return error.message;
  }
  if (error instanceof TypeError) return 'Remit could not be reached. Check your connection and try again.';
  return error instanceof Error ? error.message : String(error);
}

function waitOf(seconds: number): string {
  if (seconds < 90) return `${seconds} seconds`;
  return `${Math.ceil(seconds / 60)} minutes`;
}
