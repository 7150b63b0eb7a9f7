/** The queues of approval deadlines (docs/approvals.md#expiry-and-escalation): named apart from their handlers. */
export const APPROVAL_EXPIRY_QUEUE = 'remit.approvals.expire';
export const APPROVAL_ESCALATION_QUEUE = 'remit.approvals.escalate';
