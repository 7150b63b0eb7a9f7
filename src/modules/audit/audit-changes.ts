import { isDeepStrictEqual } from 'node:util';

/** One field of an audit event: its value before the change and after it (null: absent). */
export interface FieldChange {
  before: unknown;
  after: unknown;
}
export type Changes = Record<string, FieldChange>;

/** What a secret's value is written as: that it is set (or changed) shows, never what it is. */
export const REDACTED = '[redacted]';

/**
 * Fields whose values never reach the audit log, at any depth: key hashes, signing secrets, SMTP URLs
 * (they carry the password), passwords and tokens. Matched on the snake_case name.
 */
const SECRET_FIELD =
  /(^|_)(secret|secrets|password|passphrase|token|hash|smtp_url|api_key|credentials)$|^key$/;

export function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name);
}

/** Bookkeeping every row has; an event says which entity it is about, and when, by itself. */
const ALWAYS_OMITTED = ['uid', 'organization_uid', 'created_at', 'updated_at'];

const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A value as JSON will hold it: instants as ISO strings, secrets inside objects redacted. */
function normalize(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
      out[key] = isSecretField(snakeCase(key)) && inner != null ? REDACTED : normalize(inner);
    }
    return out;
  }
  return value;
}

export interface ChangesOptions {
  /** snake_case names of fields to leave out (beyond uid, organization_uid, created_at, updated_at). */
  omit?: readonly string[];
}

/**
 * `{field: {before, after}}` for the fields that differ between two states of an entity (field names
 * in snake_case, as the API shows them). `before` null: the entity was created, and every field it has
 * is listed; `after` null: it was deleted. Secret fields show only whether they are set: `[redacted]`
 * or null.
 */
export function changesBetween(
  before: object | null,
  after: object | null,
  options: ChangesOptions = {},
): Changes {
  const omitted = new Set([...ALWAYS_OMITTED, ...(options.omit ?? [])]);
  const fields = new Map<string, { before: unknown; after: unknown }>();
  for (const [key, value] of Object.entries(before ?? {})) {
    fields.set(snakeCase(key), { before: value, after: undefined });
  }
  for (const [key, value] of Object.entries(after ?? {})) {
    const name = snakeCase(key);
    fields.set(name, { before: fields.get(name)?.before, after: value });
  }
  const changes: Changes = {};
  for (const [name, field] of fields) {
    if (omitted.has(name)) continue;
    const b = normalize(field.before);
    const a = normalize(field.after);
    if (isDeepStrictEqual(b, a)) continue;
    changes[name] = isSecretField(name)
      ? { before: b === null ? null : REDACTED, after: a === null ? null : REDACTED }
      : { before: b, after: a };
  }
  return changes;
}

export function hasChanges(changes: Changes): boolean {
  return Object.keys(changes).length > 0;
}
