-- Bulk mutation jobs are a feature the platform turns on per account: an account without bulk
-- access is refused POST /bulk_mutation_jobs (403) and says so in GET /me.
ALTER TABLE accounts ADD COLUMN bulk_access boolean NOT NULL DEFAULT true;
