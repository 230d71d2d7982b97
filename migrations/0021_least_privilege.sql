-- Issue #32: least privilege that holds in the database, not only in the
-- code. A secret never follows its address, whoever runs the UPDATE (a flaw
-- in the console connected as hookinbox_console included), and the audit
-- keeps no URL's path or query.

-- L1: "has a key" counts a plain key stored before sealing. The console's
-- role may not read either key column; it reads this.
ALTER TABLE endpoints ADD COLUMN api_key_present boolean
    GENERATED ALWAYS AS (api_key IS NOT NULL OR api_key_sealed IS NOT NULL) STORED;

-- L2: an endpoint's API key was given for its base URL. An UPDATE that
-- changes the URL and does not write a new key in the same statement
-- clears the key (sealed and plain, with its key id and fingerprint).
CREATE FUNCTION hookinbox_api_key_follows_no_url() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.api_base_url IS DISTINCT FROM OLD.api_base_url
       AND NEW.api_key_sealed IS NOT DISTINCT FROM OLD.api_key_sealed
       AND NEW.api_key IS NOT DISTINCT FROM OLD.api_key THEN
        NEW.api_key := NULL;
        NEW.api_key_sealed := NULL;
        NEW.api_key_key_id := NULL;
        NEW.api_key_fingerprint := NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER endpoints_api_key_follows_no_url BEFORE UPDATE ON endpoints
    FOR EACH ROW EXECUTE FUNCTION hookinbox_api_key_follows_no_url();

-- A forward route's secret is NOT NULL (a route signs every document): a
-- new URL without a new secret in the same statement is refused.
CREATE FUNCTION hookinbox_forward_secret_follows_no_url() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.url IS DISTINCT FROM OLD.url AND NEW.secret_sealed IS NOT DISTINCT FROM OLD.secret_sealed THEN
        RAISE EXCEPTION 'forward route %: a new URL needs a new secret (a secret never follows its URL)', OLD.name
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER forward_routes_secret_follows_no_url BEFORE UPDATE ON forward_routes
    FOR EACH ROW EXECUTE FUNCTION hookinbox_forward_secret_follows_no_url();

-- A team destination's signing secret was given for its target: a new
-- target without a new secret clears it (the destination is then unsigned,
-- which the listing shows).
CREATE FUNCTION hookinbox_destination_secret_follows_no_target() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.target IS DISTINCT FROM OLD.target OR NEW.kind IS DISTINCT FROM OLD.kind)
       AND NEW.secret_sealed IS NOT DISTINCT FROM OLD.secret_sealed
       AND NEW.secret IS NOT DISTINCT FROM OLD.secret THEN
        NEW.secret := NULL;
        NEW.secret_sealed := NULL;
        NEW.secret_key_id := NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER team_destinations_secret_follows_no_target BEFORE UPDATE ON team_destinations
    FOR EACH ROW EXECUTE FUNCTION hookinbox_destination_secret_follows_no_target();

-- The erasure's one write to team_destinations, run as the owner: a
-- workspace's email destinations get the fixed redacted address and are
-- disabled. The console may call it and no longer UPDATE the table, so it
-- can neither point a destination elsewhere nor enable one. EXECUTE is
-- granted by `hookinbox db roles` (internal/store/roles.go), not to PUBLIC.
CREATE FUNCTION hookinbox_erase_destinations(ws text) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH done AS (
        UPDATE public.team_destinations SET target = 'redacted@erased.invalid', enabled = false
         WHERE workspace_id = ws AND kind = 'email' AND target <> 'redacted@erased.invalid'
        RETURNING 1)
    SELECT count(*) FROM done;
$$;
REVOKE ALL ON FUNCTION hookinbox_erase_destinations(text) FROM PUBLIC;

-- M1: audit entries written before this release may hold a URL's path and
-- query (a notification webhook's token). Every URL in an entry's details
-- is cut to its scheme and host, as store.InsertOperatorAction now writes
-- them (the same expression: store.RedactURLs).
UPDATE operator_actions
   SET details = regexp_replace(details::text,
                   '([a-z][a-z0-9+.-]*://)(?:[^/?#@"\\\s]*@)?([^/?#"\\\s]*)(?:[/?#](?:[^"\\\s]|\\.)*)?', '\1\2', 'gi')::jsonb
 WHERE details::text ~* '[a-z][a-z0-9+.-]*://(?:[^/?#@"\\\s]*@|[^/?#"\\\s]*[/?#])';

---- create above / drop below ----
DROP FUNCTION hookinbox_erase_destinations(text);
DROP TRIGGER team_destinations_secret_follows_no_target ON team_destinations;
DROP FUNCTION hookinbox_destination_secret_follows_no_target();
DROP TRIGGER forward_routes_secret_follows_no_url ON forward_routes;
DROP FUNCTION hookinbox_forward_secret_follows_no_url();
DROP TRIGGER endpoints_api_key_follows_no_url ON endpoints;
DROP FUNCTION hookinbox_api_key_follows_no_url();
ALTER TABLE endpoints DROP COLUMN api_key_present;
