-- The organization's default Slack channel (issue 20, docs/agents.md#notifications): where the
-- notifications of agents without a channel of their own are posted. Null: none. Not read by
-- authentication, so no auth_version trigger (those of 0005 and 0013 name their columns).
ALTER TABLE "organizations" ADD COLUMN "slack_channel_id" text;
