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
  'organization:read',
  'organization:write',
  'audit:read',
  'members:read',
  'members:write',
  'webhooks:read',
  'webhooks:write',
  'account:read',
  'account:write',
] as const;

export type Scope = (typeof SCOPES)[number];
export type Role = 'admin' | 'member';

const ADMIN_ONLY: ReadonlySet<Scope> = new Set<Scope>([
  'agents:token_usage',
  'organization:write',
  'audit:read',
  'members:read',
  'members:write',
  'webhooks:read',
  'webhooks:write',
]);

/** What each scope allows, in words (docs/authentication.md#scopes), for people choosing a key's scopes. */
export const SCOPE_DESCRIPTIONS: Readonly<Record<Scope, string>> = {
  'invoices:read':
    'Read invoices and what belongs to them: line items, attachments, comments, parties, products',
  'invoices:write': 'Create and change invoices and what belongs to them',
  'work_tasks:read': 'Read work tasks, including approval tasks',
  'work_tasks:write': 'Create, update, approve and reject work tasks',
  'agents:read': 'Read agents, their runs and notifications',
  'agents:write': 'Create and change agents, start and cancel runs, raise approvals',
  'agents:token_usage': "See agents' token usage",
  'email:read': 'Read email drafts, accounts and dynamic fields',
  'email:write': 'Prepare, save, schedule and cancel email',
  'knowledge:write': 'Upload knowledge documents',
  'metrics:read': 'Read metric definitions and values',
  'metrics:write': 'Create metric definitions and values',
  'search:read': 'Entity and context search',
  'api_keys:read': 'List API keys',
  'api_keys:write': 'Create and revoke API keys',
  'organization:read':
    "Read the organization's settings: segregation of duties, second factor for admins, the default Slack channel",
  'organization:write': "Change the organization's settings",
  'audit:read': "Read the organization's audit log",
  'members:read': "List the organization's members and invitations",
  'members:write': 'Invite people, change roles, remove members',
  'webhooks:read': 'Read webhook endpoints, their deliveries and the event list',
  'webhooks:write': 'Register, change and remove webhook endpoints, rotate secrets, send tests, resend',
  'account:read': "Read the key's own person's preferences (approval emails)",
  'account:write': "Change the key's own person's preferences",
};

/** Held by admins only: a member's key never grants these (docs/authentication.md#roles). */
export function isAdminOnly(scope: Scope): boolean {
  return ADMIN_ONLY.has(scope);
}

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
