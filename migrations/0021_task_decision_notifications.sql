-- Waiting for a decision (issue 21; docs/work-tasks.md#waiting-for-a-decision). `GET /api/work-tasks/{uid}?wait=N`
-- holds the request until the approval is decided. Whichever process decides, this trigger NOTIFYs
-- `remit_task_status` with the task's uid at commit, so the process holding the wait answers at once
-- rather than on its next re-read. Row-level and only when status or resolution moved: a title edit
-- wakes nobody. The payload is the uid alone: a listener re-reads the task within its tenant.
CREATE FUNCTION remit_notify_task_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('remit_task_status', NEW.uid::text);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER work_tasks_status_change
  AFTER UPDATE OF status, resolution ON work_tasks
  FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.resolution IS DISTINCT FROM NEW.resolution)
  EXECUTE FUNCTION remit_notify_task_status();
