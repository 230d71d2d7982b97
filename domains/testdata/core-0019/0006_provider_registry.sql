-- Which providers exist is the registry's to say (package providers, one
-- registration line per provider in providers/all), checked when an
-- endpoint is registered; a list here would make every new provider a
-- migration too.
ALTER TABLE endpoints DROP CONSTRAINT endpoints_provider_check;

---- create above / drop below ----

ALTER TABLE endpoints ADD CONSTRAINT endpoints_provider_check
    CHECK (provider IN ('stripe', 'github', 'standard', 'shopify'));
