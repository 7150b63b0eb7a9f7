CREATE TABLE "agent_notifications" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"agent_uid" uuid NOT NULL,
	"run_uid" uuid,
	"task_uid" uuid,
	"invoice_uid" uuid,
	"event" text NOT NULL,
	"channel_id" text,
	"text" text NOT NULL,
	"delivery_status" text DEFAULT 'recorded' NOT NULL,
	"delivery_error" text,
	"external_id" text,
	"delivered_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agent_runs" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"agent_uid" uuid NOT NULL,
	"agent_version_uid" uuid NOT NULL,
	"scratchpad_uid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"workflow_id" text,
	"approach" text DEFAULT 'default' NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"sandbox" boolean DEFAULT false NOT NULL,
	"trigger_type" text DEFAULT 'manual' NOT NULL,
	"trigger" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"input" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"task_uid" uuid,
	"requested_by_uid" uuid,
	"scratchpad" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"outcome" jsonb,
	"error" text,
	"token_usage" jsonb DEFAULT '{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}'::jsonb NOT NULL,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"started_on" timestamp with time zone,
	"completed_on" timestamp with time zone,
	"created_on" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_on" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agent_versions" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"agent_uid" uuid NOT NULL,
	"version" integer NOT NULL,
	"instructions" text NOT NULL,
	"tools" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"agent_type" text DEFAULT 'custom' NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"instructions" text DEFAULT '' NOT NULL,
	"status" text DEFAULT 'draft' NOT NULL,
	"created_by_uid" uuid,
	"notification_config" jsonb,
	"triggers" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"tools" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"current_version_uid" uuid,
	"runs_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "work_task_changes" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"task_uid" uuid NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"by_type" text NOT NULL,
	"by_user_uid" uuid,
	"by_agent_uid" uuid,
	"by_name" text NOT NULL,
	"action" text NOT NULL,
	"details" jsonb,
	"seq" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "work_task_context_entities" (
	"organization_uid" uuid NOT NULL,
	"task_uid" uuid NOT NULL,
	"entity_type" text NOT NULL,
	"entity_uid" uuid NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "work_task_context_entities_organization_uid_task_uid_entity_type_entity_uid_pk" PRIMARY KEY("organization_uid","task_uid","entity_type","entity_uid")
);
--> statement-breakpoint
CREATE TABLE "work_tasks" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"type" text DEFAULT 'task' NOT NULL,
	"title" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"status" text DEFAULT 'todo' NOT NULL,
	"priority" text DEFAULT 'medium' NOT NULL,
	"due_date" date,
	"assignee_type" text,
	"assignee_user_uid" uuid,
	"assignee_agent_uid" uuid,
	"origin_type" text NOT NULL,
	"origin_user_uid" uuid,
	"origin_agent_uid" uuid,
	"origin_trigger_type" text,
	"reasoning" text,
	"tool_args" jsonb,
	"trigger" jsonb,
	"run_uid" uuid,
	"resolution" text,
	"resolved_at" timestamp with time zone,
	"resolved_by_user_uid" uuid,
	"resolution_note" text,
	"revision" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"subject" text DEFAULT '' NOT NULL,
	"channel" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"party_uid" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"conversation_uid" uuid NOT NULL,
	"direction" text DEFAULT 'outbound' NOT NULL,
	"subject" text DEFAULT '' NOT NULL,
	"from_email" text DEFAULT '' NOT NULL,
	"to_addresses" text[] DEFAULT '{}'::text[] NOT NULL,
	"body_text" text DEFAULT '' NOT NULL,
	"message_id" text,
	"in_reply_to" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "knowledge_documents" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"filename" text NOT NULL,
	"content_type" text NOT NULL,
	"file_size" bigint,
	"sha256" text,
	"s3_object_name" text NOT NULL,
	"status" text DEFAULT 'presigned' NOT NULL,
	"workflow_id" text,
	"error" text,
	"extracted_text" text,
	"presign_expires_at" timestamp with time zone,
	"created_by_uid" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "documents" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"filename" text NOT NULL,
	"document_name" text DEFAULT '' NOT NULL,
	"content_type" text NOT NULL,
	"file_size" bigint NOT NULL,
	"sha256" text NOT NULL,
	"storage_key" text NOT NULL,
	"uploaded_by_uid" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "metric_definitions" (
	"organization_uid" uuid NOT NULL,
	"uid" text NOT NULL,
	"name" text NOT NULL,
	"context_type" text DEFAULT 'ORGANIZATION' NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"formula" text DEFAULT '' NOT NULL,
	"value_type" text DEFAULT 'count' NOT NULL,
	"storage_unit" text DEFAULT 'raw' NOT NULL,
	"is_snapshot" boolean DEFAULT false NOT NULL,
	"period_definition" text DEFAULT 'as_of_date' NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"preset" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "metric_definitions_pkey" PRIMARY KEY("organization_uid","uid")
);
--> statement-breakpoint
CREATE TABLE "metric_values" (
	"uid" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_uid" uuid NOT NULL,
	"metric_uid" text NOT NULL,
	"context_type" text NOT NULL,
	"entity_uid" uuid NOT NULL,
	"time_unit" text NOT NULL,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"metric_date" date NOT NULL,
	"value" double precision NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_notifications" ADD CONSTRAINT "agent_notifications_agent_uid_agents_uid_fk" FOREIGN KEY ("agent_uid") REFERENCES "public"."agents"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_runs" ADD CONSTRAINT "agent_runs_agent_uid_agents_uid_fk" FOREIGN KEY ("agent_uid") REFERENCES "public"."agents"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_versions" ADD CONSTRAINT "agent_versions_agent_uid_agents_uid_fk" FOREIGN KEY ("agent_uid") REFERENCES "public"."agents"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_created_by_uid_users_uid_fk" FOREIGN KEY ("created_by_uid") REFERENCES "public"."users"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_task_changes" ADD CONSTRAINT "work_task_changes_task_uid_work_tasks_uid_fk" FOREIGN KEY ("task_uid") REFERENCES "public"."work_tasks"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_task_context_entities" ADD CONSTRAINT "work_task_context_entities_task_uid_work_tasks_uid_fk" FOREIGN KEY ("task_uid") REFERENCES "public"."work_tasks"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_tasks" ADD CONSTRAINT "work_tasks_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_party_uid_parties_uid_fk" FOREIGN KEY ("party_uid") REFERENCES "public"."parties"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_conversation_uid_conversations_uid_fk" FOREIGN KEY ("conversation_uid") REFERENCES "public"."conversations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_documents" ADD CONSTRAINT "knowledge_documents_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "metric_definitions" ADD CONSTRAINT "metric_definitions_organization_uid_organizations_uid_fk" FOREIGN KEY ("organization_uid") REFERENCES "public"."organizations"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "metric_values" ADD CONSTRAINT "metric_values_definition_fk" FOREIGN KEY ("organization_uid","metric_uid") REFERENCES "public"."metric_definitions"("organization_uid","uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_notifications_agent_idx" ON "agent_notifications" USING btree ("organization_uid","agent_uid","created_at" DESC NULLS LAST,"uid");--> statement-breakpoint
CREATE INDEX "agent_runs_agent_started_idx" ON "agent_runs" USING btree ("organization_uid","agent_uid","started_on" DESC NULLS LAST,"uid");--> statement-breakpoint
CREATE INDEX "agent_runs_agent_created_idx" ON "agent_runs" USING btree ("organization_uid","agent_uid","created_on" DESC NULLS LAST,"uid");--> statement-breakpoint
CREATE UNIQUE INDEX "agent_runs_task_key" ON "agent_runs" USING btree ("organization_uid","task_uid") WHERE task_uid is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "agent_versions_agent_version_key" ON "agent_versions" USING btree ("organization_uid","agent_uid","version");--> statement-breakpoint
CREATE INDEX "agents_org_created_idx" ON "agents" USING btree ("organization_uid","created_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "work_task_changes_task_idx" ON "work_task_changes" USING btree ("organization_uid","task_uid","at","seq");--> statement-breakpoint
CREATE INDEX "work_task_context_entity_idx" ON "work_task_context_entities" USING btree ("organization_uid","entity_type","entity_uid");--> statement-breakpoint
CREATE INDEX "work_tasks_org_created_idx" ON "work_tasks" USING btree ("organization_uid","created_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "work_tasks_org_status_idx" ON "work_tasks" USING btree ("organization_uid","status","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "work_tasks_org_assignee_user_idx" ON "work_tasks" USING btree ("organization_uid","assignee_user_uid");--> statement-breakpoint
CREATE INDEX "work_tasks_org_assignee_agent_idx" ON "work_tasks" USING btree ("organization_uid","assignee_agent_uid");--> statement-breakpoint
CREATE INDEX "work_tasks_title_trgm_idx" ON "work_tasks" USING gin ("title" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "work_tasks_description_trgm_idx" ON "work_tasks" USING gin ("description" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "conversations_org_created_idx" ON "conversations" USING btree ("organization_uid","created_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "conversations_subject_trgm_idx" ON "conversations" USING gin ("subject" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "conversations_channel_trgm_idx" ON "conversations" USING gin ("channel" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "conversations_status_trgm_idx" ON "conversations" USING gin ("status" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "messages_conversation_idx" ON "messages" USING btree ("organization_uid","conversation_uid","created_at");--> statement-breakpoint
CREATE INDEX "messages_message_id_idx" ON "messages" USING btree ("organization_uid","message_id");--> statement-breakpoint
CREATE INDEX "messages_org_created_idx" ON "messages" USING btree ("organization_uid","created_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "messages_subject_trgm_idx" ON "messages" USING gin ("subject" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "messages_from_email_trgm_idx" ON "messages" USING gin ("from_email" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "knowledge_documents_org_created_idx" ON "knowledge_documents" USING btree ("organization_uid","created_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "knowledge_documents_presign_expiry_idx" ON "knowledge_documents" USING btree ("presign_expires_at") WHERE status = 'presigned';--> statement-breakpoint
CREATE INDEX "knowledge_documents_filename_trgm_idx" ON "knowledge_documents" USING gin ("filename" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "documents_org_updated_idx" ON "documents" USING btree ("organization_uid","updated_at" DESC NULLS LAST,"uid" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "documents_filename_trgm_idx" ON "documents" USING gin ("filename" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "documents_document_name_trgm_idx" ON "documents" USING gin ("document_name" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "metric_definitions_org_created_idx" ON "metric_definitions" USING btree ("organization_uid","created_at","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "metric_values_point_key" ON "metric_values" USING btree ("organization_uid","entity_uid","metric_uid","time_unit","metric_date");--> statement-breakpoint
CREATE INDEX "metric_values_series_idx" ON "metric_values" USING btree ("organization_uid","metric_uid","entity_uid","time_unit","metric_date");