-- Which version of an approval's arguments a person decided: bumped only when `tool_args` change (an
-- agent's revision, a person's edit with an approval), so a decision sent with the revision it was shown
-- is refused when the arguments changed since (docs/approvals.md#decide-what-you-saw).
ALTER TABLE "work_tasks" ADD COLUMN "args_revision" integer DEFAULT 1 NOT NULL;
