-- A person removed from an organization: when it was their default one, their oldest remaining
-- membership becomes the default (so joining again later leaves the default where it is, as adding a
-- membership always does); when it was their last one, their sign-in sessions end (they could act
-- nowhere). In the removal's own transaction, whatever removed it (the API, the CLI, a deleted
-- organization), and as the owner: the person's other memberships and sessions are outside the
-- remover's organization, which row-level security keeps the request's role to.
CREATE FUNCTION memberships_after_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
  IF OLD.is_default THEN
    UPDATE public.memberships SET is_default = true
     WHERE user_uid = OLD.user_uid
       AND organization_uid = (SELECT m.organization_uid FROM public.memberships m
                                WHERE m.user_uid = OLD.user_uid
                                ORDER BY m.created_at, m.organization_uid LIMIT 1);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM public.memberships m WHERE m.user_uid = OLD.user_uid) THEN
    UPDATE public.user_sessions SET revoked_at = now()
     WHERE user_uid = OLD.user_uid AND revoked_at IS NULL;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION memberships_after_delete() FROM PUBLIC;
--> statement-breakpoint
CREATE TRIGGER memberships_after_delete AFTER DELETE ON memberships
  FOR EACH ROW EXECUTE FUNCTION memberships_after_delete();
