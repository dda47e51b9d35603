-- The per-account request budget to the ad platform, shared by every replica: one token bucket
-- per connection. A call takes a token in one statement that first refills the bucket by the
-- time elapsed (on the database's clock, so replicas' clocks do not matter).

CREATE TABLE request_budgets (
  account_id uuid PRIMARY KEY REFERENCES connections (account_id) ON DELETE CASCADE,
  -- May be fractional: the bucket refills continuously.
  tokens double precision NOT NULL,
  updated_at timestamptz NOT NULL
);
