import { describe, expect, it } from 'vitest';
import type { WorkTask } from './api.ts';
import {
  approversText,
  countText,
  decisionRights,
  formatDeadline,
  stillNeededText,
} from './approval-policy.ts';

const ME = 'u-me';
const GRACE = { user_uid: 'u-grace', user_name: 'Grace Hopper' };
const ALAN = { user_uid: 'u-alan', user_name: 'Alan Turing' };
const NOW = Date.parse('2026-11-26T12:00:00Z');

type Policy = NonNullable<WorkTask['approval_policy']>;
const policy = (fields: Partial<Policy> = {}): Policy => ({
  uid: 'p',
  name: 'Payments over $5,000',
  required_approvals: 1,
  approver_roles: ['admin'],
  approver_user_uids: [],
  approver_users: [],
  forbid_initiator: false,
  initiator_user_uid: null,
  ...fields,
});
const task = (fields: Partial<WorkTask> = {}) =>
  ({
    uid: 't',
    type: 'hil_approval',
    resolution: null,
    approval_policy: null,
    approvals: [],
    expires_at: null,
    escalated_at: null,
    ...fields,
  }) as WorkTask;
const at = '2026-11-26T11:00:00Z';

describe('an approval policy explained', () => {
  it('who decides', () => {
    expect(approversText(policy())).toBe('Only admins');
    expect(approversText(policy({ approver_roles: ['member'] }))).toBe('Only members');
    expect(approversText(policy({ approver_roles: ['admin', 'member'] }))).toBe('Admins and members');
    expect(approversText(policy({ approver_roles: [], approver_users: [GRACE] }))).toBe('Only Grace Hopper');
    expect(approversText(policy({ approver_users: [GRACE, ALAN] }))).toBe(
      'Admins, or Grace Hopper and Alan Turing',
    );
  });

  it('how many: nothing to say for one approval not given yet', () => {
    expect(countText(task())).toBeNull();
    expect(countText(task({ approval_policy: policy() }))).toBeNull();
    const two = policy({ required_approvals: 2 });
    expect(countText(task({ approval_policy: two }))).toBe('2 approvals needed · 0 received');
    expect(countText(task({ approval_policy: two, approvals: [{ ...GRACE, at }] }))).toBe(
      '2 approvals needed · 1 received: Grace Hopper',
    );
    expect(stillNeededText(task({ approval_policy: two, approvals: [{ ...GRACE, at }] }))).toBe(
      'Your approval is recorded (1 of 2). It needs 1 more approval from someone else before the agent acts.',
    );
  });
});

describe('what the viewer may do', () => {
  const admin = { userUid: ME, role: 'admin' as const };
  const member = { userUid: ME, role: 'member' as const };

  it('without a policy anyone decides; after the deadline nobody does', () => {
    expect(decisionRights(task(), member, NOW)).toEqual({ approve: null, reject: null });
    const expired = decisionRights(task({ expires_at: '2026-11-26T11:59:00Z' }), admin, NOW);
    expect(expired.approve).toMatch(/expired/);
    expect(expired.reject).toMatch(/expired/);
    expect(decisionRights(task({ expires_at: '2026-11-26T13:00:00Z' }), admin, NOW).approve).toBeNull();
  });

  it('outside the roles and people: neither; named people may', () => {
    expect(decisionRights(task({ approval_policy: policy() }), member, NOW)).toEqual({
      approve: 'Only admins can decide this (policy “Payments over $5,000”).',
      reject: 'Only admins can decide this (policy “Payments over $5,000”).',
    });
    const named = policy({ approver_user_uids: [ME], approver_users: [{ user_uid: ME, user_name: 'Me' }] });
    expect(decisionRights(task({ approval_policy: named }), member, NOW)).toEqual({
      approve: null,
      reject: null,
    });
  });

  it('the initiator may reject but not approve; nobody approves twice', () => {
    const barred = policy({ forbid_initiator: true, initiator_user_uid: ME });
    expect(decisionRights(task({ approval_policy: barred }), admin, NOW)).toEqual({
      approve: 'You started this run: someone else must approve it. You may still reject it.',
      reject: null,
    });
    const two = policy({ required_approvals: 2 });
    const rights = decisionRights(
      task({ approval_policy: two, approvals: [{ user_uid: ME, user_name: 'Me', at }] }),
      admin,
      NOW,
    );
    expect(rights.approve).toBe('You approved this already; it needs 2 approvals from different people.');
    expect(rights.reject).toBeNull();
  });
});

describe('a deadline in words', () => {
  it('rounds to the nearest unit, ahead and past', () => {
    const in_ = (ms: number) => formatDeadline(new Date(NOW + ms).toISOString(), NOW, 'en-US');
    expect(in_(3 * 3_600_000 - 3_000)).toBe('in 3 hours');
    expect(in_(90 * 60_000)).toBe('in 2 hours');
    expect(in_(45 * 60_000)).toBe('in 45 minutes');
    expect(in_(-5 * 60_000)).toBe('5 minutes ago');
    expect(in_(2 * 86_400_000)).toBe('in 2 days');
    expect(in_(20_000)).toBe('in 20 seconds');
  });
});
