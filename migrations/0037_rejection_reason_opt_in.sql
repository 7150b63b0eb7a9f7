-- A rejection's reason is optional (interface 4.5: `resolution_note` is optional); an approval policy may
-- opt in to requiring one for the approvals it governs (docs/approvals.md#a-policy). Default off.
ALTER TABLE "approval_policies" ADD COLUMN "require_rejection_reason" boolean DEFAULT false NOT NULL;
