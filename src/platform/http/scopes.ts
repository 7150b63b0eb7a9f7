/** Every scope a key may carry (CONTRACT §2), `resource:action`. */
export const SCOPES = [
  'invoices:read',
  'invoices:write',
  'work_tasks:read',
  'work_tasks:write',
  'agents:read',
  'agents:write',
  'agents:token_usage',
  'email:read',
  'email:write',
  'knowledge:write',
  'metrics:read',
  'metrics:write',
  'search:read',
  'api_keys:read',
  'api_keys:write',
  'audit:read',
  'members:read',
  'members:write',
  'webhooks:read',
  'webhooks:write',
] as const;

export type Scope = (typeof SCOPES)[number];
export type Role = 'admin' | 'member';

const ADMIN_ONLY: ReadonlySet<Scope> = new Set<Scope>([
  'agents:token_usage',
  'audit:read',
  'members:read',
  'members:write',
  'webhooks:read',
  'webhooks:write',
]);

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** What a role may do at most; a key never grants more than its user's role in the organization. */
export function roleAllows(role: Role, scope: Scope): boolean {
  return role === 'admin' || !ADMIN_ONLY.has(scope);
}

/** A key's own grant: `null` scopes mean full access (still bounded by the role). */
export function keyAllows(keyScopes: readonly string[] | null, scope: Scope): boolean {
  return keyScopes === null || keyScopes.includes(scope);
}
