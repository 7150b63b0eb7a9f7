import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from './schema.ts';

export { WebhookVerificationError };

type Schemas = components['schemas'];

/** Every event type (docs/webhooks.md), from the document's `Event` schema. */
export type RemitEventType = Schemas['Event']['type'];

/**
 * `data` of the events whose sources are built (docs/webhooks.md#event-types). The document describes
 * `GET /api/events`'s `data` as any object, so these are written here from the sources; the other types
 * are typed as an object until their sources are built.
 */
export interface RemitEventData {
  'invoice.created': { invoice: Schemas['Invoice'] };
  'approval.decided': { work_task: Schemas['WorkTask']; decision: 'approve' | 'reject' | 'expired' };
  'webhook.test': { webhook_endpoint_uid: string; message: string };
}

/** A delivered event, narrowed by `type`. */
export type RemitWebhookEvent = {
  [T in RemitEventType]: {
    type: T;
    /** When the event happened (ISO 8601), the same on every retry. */
    timestamp: string;
    data: T extends keyof RemitEventData ? RemitEventData[T] : Record<string, unknown>;
  };
}[RemitEventType];

/** Node's `request.headers`, a fetch `Headers`, or a plain object. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** The clock to judge `webhook-timestamp` by. Default: now. */
  now?: Date;
  /** How far `webhook-timestamp` may be from `now`, in seconds. Default 300, the specification's. */
  toleranceS?: number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

/** Compares without stopping at the first difference, so the time taken tells nothing of the signature. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/**
 * Verifies a delivery per the Standard Webhooks specification and answers its event. `rawBody` is the
 * body exactly as received, before any JSON parsing. `secret` is the endpoint's `whsec_…`; during a
 * rotation pass both, old and new: a delivery signed by either passes. Throws
 * `WebhookVerificationError` when a header is missing, the timestamp is more than `toleranceS` from
 * `now`, or no signature matches.
 */
export function verifyWebhook(
  secret: string | readonly string[],
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  options: VerifyWebhookOptions = {},
): RemitWebhookEvent {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid Signature Headers');
  // The library judges the timestamp by the real clock; judging it here lets the caller pass one.
  const nowS = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const toleranceS = options.toleranceS ?? 300;
  if (nowS - Number(timestamp) > toleranceS) throw new WebhookVerificationError('Message timestamp too old');
  if (Number(timestamp) - nowS > toleranceS) throw new WebhookVerificationError('Message timestamp too new');

  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const given = signatures
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => entry.slice('v1,'.length));
  const at = new Date(Number(timestamp) * 1000);
  const matches = (typeof secret === 'string' ? [secret] : secret).some((one) => {
    const expected = new Webhook(one).sign(id, at, body).slice('v1,'.length);
    return given.some((signature) => sameText(signature, expected));
  });
  if (!matches) throw new WebhookVerificationError('No matching signature found');

  // Signed with the endpoint's secret, so Remit wrote it: its shape is the service's to keep.
  return JSON.parse(body) as RemitWebhookEvent;
}
