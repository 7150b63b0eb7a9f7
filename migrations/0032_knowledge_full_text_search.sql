-- Knowledge that can be found (issue 22, item 5; docs/knowledge.md#full-text-search). The extracted
-- text of knowledge documents and of documents gets a tsvector, built in the organization's search
-- language (a PostgreSQL text search configuration: 'english' by default), with a GIN index; the
-- `search_vector` is maintained by triggers so that every writer (the processing jobs, a change of the
-- language) keeps it right without knowing of it. Row-level security is unchanged: the columns live on
-- the tenant tables that already have their policies.
ALTER TABLE "organizations" ADD COLUMN "search_language" text DEFAULT 'english' NOT NULL;
--> statement-breakpoint
-- The configurations PostgreSQL 15 and PGlite (PostgreSQL 18) both ship; the list in
-- src/platform/db/text-search.ts is the same.
ALTER TABLE "organizations" ADD CONSTRAINT "organizations_search_language_check" CHECK ("search_language" IN (
  'simple', 'arabic', 'armenian', 'basque', 'catalan', 'danish', 'dutch', 'english', 'finnish', 'french',
  'german', 'greek', 'hindi', 'hungarian', 'indonesian', 'irish', 'italian', 'lithuanian', 'nepali',
  'norwegian', 'portuguese', 'romanian', 'russian', 'serbian', 'spanish', 'swedish', 'tamil', 'turkish',
  'yiddish'));
--> statement-breakpoint
ALTER TABLE "knowledge_documents" ADD COLUMN "search_vector" tsvector;
--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "extracted_text" text;
--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "text_status" text DEFAULT 'pending' NOT NULL;
--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "search_vector" tsvector;
--> statement-breakpoint
-- Documents uploaded before this migration have no text; the extraction job is only enqueued for new
-- uploads, so they are marked as having none rather than left pending for ever.
UPDATE "documents" SET "text_status" = 'none';
--> statement-breakpoint
-- The organization leads every index (distributable by organization_uid): btree_gin lets one GIN index
-- hold the organization beside the vector, so a common word is matched inside the organization's
-- entries, not across every tenant's and then rechecked. Rows without text (null) are left out.
CREATE EXTENSION IF NOT EXISTS btree_gin;
--> statement-breakpoint
CREATE INDEX "knowledge_documents_search_vector_idx" ON "knowledge_documents"
  USING gin ("organization_uid", "search_vector") WHERE "search_vector" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX "documents_search_vector_idx" ON "documents"
  USING gin ("organization_uid", "search_vector") WHERE "search_vector" IS NOT NULL;
--> statement-breakpoint
-- The vector of a row's text, in its organization's language. A text too large for one tsvector
-- (PostgreSQL's 1 MB limit: a million characters of mostly distinct words) is indexed by its first
-- 100,000 characters rather than failing the document.
CREATE FUNCTION remit_text_search_vector(organization uuid, body text) RETURNS tsvector
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  config regconfig;
BEGIN
  IF body IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT o.search_language::regconfig INTO config FROM public.organizations o WHERE o.uid = organization;
  config := coalesce(config, 'english'::regconfig);
  BEGIN
    RETURN to_tsvector(config, body);
  EXCEPTION WHEN program_limit_exceeded THEN
    RETURN to_tsvector(config, left(body, 100000));
  END;
END;
$$;
--> statement-breakpoint
CREATE FUNCTION remit_text_search_vector_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.search_vector := remit_text_search_vector(NEW.organization_uid, NEW.extracted_text);
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "knowledge_documents_search_vector" BEFORE INSERT OR UPDATE OF "extracted_text", "organization_uid"
  ON "knowledge_documents" FOR EACH ROW EXECUTE FUNCTION remit_text_search_vector_row();
--> statement-breakpoint
CREATE TRIGGER "documents_search_vector" BEFORE INSERT OR UPDATE OF "extracted_text", "organization_uid"
  ON "documents" FOR EACH ROW EXECUTE FUNCTION remit_text_search_vector_row();
--> statement-breakpoint
-- A new language re-indexes the organization's texts in the same transaction (their vectors and the
-- queries must use one configuration). Knowledge bases are small; the update touches only rows with text.
CREATE FUNCTION remit_search_language_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE public.knowledge_documents SET extracted_text = extracted_text
    WHERE organization_uid = NEW.uid AND extracted_text IS NOT NULL;
  UPDATE public.documents SET extracted_text = extracted_text
    WHERE organization_uid = NEW.uid AND extracted_text IS NOT NULL;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "organizations_search_language_changed" AFTER UPDATE OF "search_language" ON "organizations"
  FOR EACH ROW WHEN (OLD.search_language IS DISTINCT FROM NEW.search_language)
  EXECUTE FUNCTION remit_search_language_changed();
--> statement-breakpoint
-- Texts extracted before this migration.
UPDATE "knowledge_documents" SET "extracted_text" = "extracted_text" WHERE "extracted_text" IS NOT NULL;
