export {
  createRemitClient,
  signIn,
  type ListItem,
  type ListPath,
  type RemitClient,
  type RemitClientOptions,
  type RemitSession,
  type SuccessBody,
} from './client.ts';
export {
  ApprovalTimeoutError,
  requireApproval,
  waitForDecision,
  type ApprovalDecision,
  type ApprovalFeedback,
  type ApprovalRevision,
  type RequireApprovalOptions,
} from './approvals.ts';
export { RemitApiError, type RemitErrorCode, type RemitFieldError } from './errors.ts';
export {
  claimedRun,
  claimFollowUpRun,
  claimNextRun,
  claimRun,
  findFollowUpRun,
  runOutsideAgent,
  RunLostError,
  workOnRun,
  type AgentRun,
  type ClaimedRun,
  type ClaimOptions,
  type RunContext,
  type RunFilter,
  type RunHandler,
  type RunOutcome,
  type RunOutsideAgentOptions,
  type TokenUsage,
  type WorkOptions,
} from './runs.ts';
export {
  verifyWebhook,
  WebhookVerificationError,
  type RemitEventData,
  type RemitEventType,
  type RemitWebhookEvent,
  type VerifyWebhookOptions,
  type WebhookHeaders,
} from './webhooks.ts';
export type { components, operations, paths } from './schema.ts';
