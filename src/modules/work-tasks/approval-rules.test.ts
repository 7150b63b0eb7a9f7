import { describe, expect, it } from 'vitest';
import {
  amountOf,
  choosePolicy,
  policyMatches,
  refusalOf,
  specificityOf,
  type PolicyScope,
  type PolicySnapshot,
} from './approval-rules.ts';

const AGENT = 'a0000000-0000-4000-8000-000000000001';
const OTHER_AGENT = 'a0000000-0000-4000-8000-000000000002';

let n = 0;
function policy(fields: Partial<PolicyScope> = {}): PolicyScope {
  n += 1;
  return {
    uid: `p0000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    agentUid: null,
    toolType: null,
    minAmountCents: null,
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)),
    ...fields,
  };
}
const payment = (amount?: unknown) => ({
  agentUid: AGENT,
  toolArgs: { type: 'payment', ...(amount === undefined ? {} : { amount_cents: amount }) },
});

describe('which policy governs an approval', () => {
  it('matches on agent, tool (tool_args.type) and a minimum amount (tool_args.amount_cents)', () => {
    expect(policyMatches(policy(), payment())).toBe(true);
    expect(policyMatches(policy({ agentUid: AGENT }), payment())).toBe(true);
    expect(policyMatches(policy({ agentUid: OTHER_AGENT }), payment())).toBe(false);
    expect(policyMatches(policy({ toolType: 'payment' }), payment())).toBe(true);
    expect(policyMatches(policy({ toolType: 'send_email' }), payment())).toBe(false);
    expect(policyMatches(policy({ minAmountCents: 500_000 }), payment(500_000))).toBe(true);
    expect(policyMatches(policy({ minAmountCents: 500_000 }), payment(499_999))).toBe(false);
  });

  it('an approval without a numeric amount_cents reaches no minimum (a numeric string is not a number)', () => {
    for (const amount of [undefined, '900000', null, Number.NaN, Infinity, { cents: 1 }])
      expect(policyMatches(policy({ minAmountCents: 0 }), payment(amount)), String(amount)).toBe(false);
    expect(amountOf({ amount_cents: 0 })).toBe(0);
  });

  it('specificity: agent and tool 3, agent 2, tool 1, organization-wide 0', () => {
    expect(specificityOf(policy({ agentUid: AGENT, toolType: 'payment' }))).toBe(3);
    expect(specificityOf(policy({ agentUid: AGENT }))).toBe(2);
    expect(specificityOf(policy({ toolType: 'payment' }))).toBe(1);
    expect(specificityOf(policy())).toBe(0);
  });

  it('the most specific wins, whatever the order given and however old', () => {
    const orgWide = policy();
    const tool = policy({ toolType: 'payment' });
    const agent = policy({ agentUid: AGENT });
    const both = policy({ agentUid: AGENT, toolType: 'payment', createdAt: new Date(0) });
    const all = [orgWide, tool, agent, both];
    expect(choosePolicy(all, payment())).toBe(both);
    expect(choosePolicy([...all].reverse(), payment())).toBe(both);
    expect(choosePolicy([orgWide, tool, agent], payment())).toBe(agent);
    expect(choosePolicy([orgWide, tool], payment())).toBe(tool);
    expect(choosePolicy([orgWide], payment())).toBe(orgWide);
  });

  it('then the highest minimum amount that is reached (none counts lowest), then the newest', () => {
    const any = policy({ toolType: 'payment' });
    const over1k = policy({ toolType: 'payment', minAmountCents: 100_000 });
    const over5k = policy({ toolType: 'payment', minAmountCents: 500_000 });
    expect(choosePolicy([over5k, any, over1k], payment(600_000))).toBe(over5k);
    expect(choosePolicy([over5k, any, over1k], payment(200_000))).toBe(over1k);
    expect(choosePolicy([over5k, any, over1k], payment(50_000))).toBe(any);
    expect(choosePolicy([over5k, any, over1k], payment())).toBe(any);
    const older = policy({ toolType: 'payment', createdAt: new Date(Date.UTC(2025, 0, 1)) });
    const newer = policy({ toolType: 'payment', createdAt: new Date(Date.UTC(2027, 0, 1)) });
    expect(choosePolicy([newer, older], payment())).toBe(newer);
    expect(choosePolicy([older, newer], payment())).toBe(newer);
  });

  it('none matches: no policy (today’s rules)', () => {
    expect(choosePolicy([], payment())).toBeUndefined();
    expect(choosePolicy([policy({ agentUid: OTHER_AGENT }), policy({ toolType: 'x' })], payment())).toBe(
      undefined,
    );
  });
});

describe('who may decide', () => {
  const GRACE = 'u0000000-0000-4000-8000-000000000001';
  const ALAN = 'u0000000-0000-4000-8000-000000000002';
  const rules = (fields: Partial<PolicySnapshot>): PolicySnapshot => ({
    uid: 'p',
    name: 'Payments',
    agent_uid: null,
    tool_type: null,
    min_amount_cents: null,
    approver_roles: [],
    approver_user_uids: [],
    required_approvals: 1,
    forbid_initiator: false,
    expires_after_minutes: null,
    escalate_after_minutes: null,
    escalate_to_user_uids: [],
    escalate_to_chat_channel_id: null,
    ...fields,
  });

  it('without a policy anyone in the organization decides', () => {
    expect(refusalOf(null, { userUid: GRACE, role: 'member' }, 'approve', GRACE)).toBeNull();
  });

  it('by role, or by name', () => {
    const admins = rules({ approver_roles: ['admin'] });
    expect(refusalOf(admins, { userUid: GRACE, role: 'admin' }, 'approve', null)).toBeNull();
    expect(refusalOf(admins, { userUid: GRACE, role: 'member' }, 'approve', null)).toBe('not_an_approver');
    expect(refusalOf(admins, { userUid: GRACE, role: 'member' }, 'reject', null)).toBe('not_an_approver');
    const grace = rules({ approver_user_uids: [GRACE] });
    expect(refusalOf(grace, { userUid: GRACE, role: 'member' }, 'approve', null)).toBeNull();
    expect(refusalOf(grace, { userUid: ALAN, role: 'admin' }, 'approve', null)).toBe('not_an_approver');
    expect(refusalOf(grace, { userUid: GRACE, role: undefined }, 'approve', null)).toBeNull();
  });

  it('the initiator may not approve when the policy forbids it, but may reject', () => {
    const fourEyes = rules({ approver_roles: ['admin', 'member'], forbid_initiator: true });
    const grace = { userUid: GRACE, role: 'admin' as const };
    expect(refusalOf(fourEyes, grace, 'approve', GRACE)).toBe('initiator_cannot_approve');
    expect(refusalOf(fourEyes, grace, 'reject', GRACE)).toBeNull();
    expect(refusalOf(fourEyes, grace, 'approve', ALAN)).toBeNull();
    expect(refusalOf(fourEyes, grace, 'approve', null)).toBeNull();
    expect(refusalOf({ ...fourEyes, forbid_initiator: false }, grace, 'approve', GRACE)).toBeNull();
  });
});
