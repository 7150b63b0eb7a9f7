import type { WorkTask } from './api.ts';

/**
 * What an approval's policy means for the person looking at it (docs/approvals.md): who may decide, what
 * is still needed, and why they may not approve or reject. The server decides; this only explains, and
 * keeps the buttons that would be refused from being pressed.
 */

export interface Viewer {
  userUid: string;
  /** Their role in the approval's organization. */
  role: 'admin' | 'member' | undefined;
}

type Policy = NonNullable<WorkTask['approval_policy']>;

const names = (items: string[]) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/** `Only admins`, `Admins and members`, `Only Grace Hopper`, `Admins, or Grace Hopper and Alan Turing`. */
export function approversText(policy: Policy): string {
  const roles = policy.approver_roles;
  const people = policy.approver_users.map((u) => u.user_name || 'a former member');
  const roleText =
    roles.length === 2
      ? 'Admins and members'
      : roles.length === 1
        ? `${roles[0] === 'admin' ? 'Admins' : 'Members'}`
        : '';
  if (roleText && people.length === 0)
    return roles.length === 2 ? roleText : `Only ${roleText.toLowerCase()}`;
  if (!roleText) return `Only ${names(people)}`;
  return `${roleText}, or ${names(people)}`;
}

/** `2 approvals needed · 1 received: Grace Hopper`; null when one approval decides and none came yet. */
export function countText(task: WorkTask): string | null {
  const required = task.approval_policy?.required_approvals ?? 1;
  const received = task.approvals ?? [];
  if (required <= 1 && received.length === 0) return null;
  const needed = `${required} ${required === 1 ? 'approval' : 'approvals'} needed`;
  return `${needed} · ${received.length} received${received.length > 0 ? `: ${names(received.map((a) => a.user_name || 'someone'))}` : ''}`;
}

export const isPastDeadline = (task: WorkTask, now: number = Date.now()) =>
  Boolean(task.expires_at) && Date.parse(task.expires_at!) <= now;

/**
 * Why this person may not approve, and why not reject or respond (null: they may), as the API would answer:
 * past the deadline nobody decides; outside the policy's roles and people they may not decide; the
 * initiator may not approve when the policy says so (but may reject); and nobody approves twice.
 */
export function decisionRights(
  task: WorkTask,
  viewer: Viewer,
  now: number = Date.now(),
): { approve: string | null; reject: string | null } {
  if (task.resolution) return { approve: 'This approval is decided.', reject: 'This approval is decided.' };
  if (isPastDeadline(task, now)) {
    const expired =
      'This approval has expired: nobody can decide it any more, and the action will not happen.';
    return { approve: expired, reject: expired };
  }
  const policy = task.approval_policy;
  if (!policy) return { approve: null, reject: null };
  const byRole = viewer.role !== undefined && policy.approver_roles.includes(viewer.role);
  if (!byRole && !policy.approver_user_uids.includes(viewer.userUid)) {
    const only = `${approversText(policy)} can decide this (policy “${policy.name}”).`;
    return { approve: only, reject: only };
  }
  if (policy.forbid_initiator && policy.initiator_user_uid === viewer.userUid)
    return {
      approve: 'You started this run: someone else must approve it. You may still reject it.',
      reject: null,
    };
  if ((task.approvals ?? []).some((a) => a.user_uid === viewer.userUid)) {
    return {
      approve: `You approved this already; it needs ${policy.required_approvals} approvals from different people.`,
      reject: null,
    };
  }
  return { approve: null, reject: null };
}

/** After an approval that did not complete the count: what is still needed. */
export function stillNeededText(task: WorkTask): string {
  const required = task.approval_policy?.required_approvals ?? 1;
  const received = task.approvals?.length ?? 0;
  const left = Math.max(0, required - received);
  return `Your approval is recorded (${received} of ${required}). It needs ${left} more ${left === 1 ? 'approval' : 'approvals'} from someone else before the agent acts.`;
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
];

/**
 * A deadline as `in 3 hours` or `5 minutes ago`, rounded to the nearest unit: two hours and fifty-nine
 * minutes ahead reads `in 3 hours` (format.ts's `formatAgo` truncates, which suits the past).
 */
export function formatDeadline(iso: string, now: number = Date.now(), locale?: string): string {
  const seconds = (Date.parse(iso) - now) / 1000;
  const format = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size * 0.95) return format.format(Math.round(seconds / size), unit);
  }
  return format.format(Math.round(seconds), 'second');
}
