-- Richer answers to an approval (issue 21, point 5; docs/approvals.md#respond-feedback-without-deciding).
-- A person may respond: send the agent feedback without deciding. The feedback the agent has not answered
-- yet is kept on the task (`response`), and the agent's follow-up run revises the request from it.
ALTER TABLE "work_tasks" ADD COLUMN "response" jsonb;
--> statement-breakpoint
-- Every answer the agent acts on now starts a follow-up run (approve, reject, and any number of
-- responses before the decision), so "one run per task" no longer holds. One run per *decision* still
-- does: a response's run is the only kind a task may have several of. Runs from before this migration
-- carry no `decision` in their input: they were approvals.
DROP INDEX "agent_runs_task_key";
--> statement-breakpoint
CREATE UNIQUE INDEX "agent_runs_task_decision_key" ON "agent_runs" USING btree ("organization_uid", "task_uid")
  WHERE task_uid IS NOT NULL AND coalesce(input #>> '{decision,action}', 'approve') <> 'respond';
--> statement-breakpoint
CREATE INDEX "agent_runs_task_idx" ON "agent_runs" USING btree ("organization_uid", "task_uid")
  WHERE task_uid IS NOT NULL;
--> statement-breakpoint
-- A `GET …?wait=N` held for an approval answers when a person responds, too (0021 woke it only on a
-- status or resolution change).
DROP TRIGGER work_tasks_status_change ON work_tasks;
--> statement-breakpoint
CREATE TRIGGER work_tasks_status_change
  AFTER UPDATE OF status, resolution, response ON work_tasks
  FOR EACH ROW
  WHEN (
    OLD.status IS DISTINCT FROM NEW.status
    OR OLD.resolution IS DISTINCT FROM NEW.resolution
    OR OLD.response IS DISTINCT FROM NEW.response
  )
  EXECUTE FUNCTION remit_notify_task_status();
