-- occurred_at as the CRM wrote it (RFC 3339, up to nine fraction digits, its own offset). The
-- timestamptz column keeps microseconds, and JavaScript's Date only milliseconds: an outcome's
-- fingerprint now takes its instant with every digit given, so two instants apart by less than a
-- millisecond are different content, not an exact repeat. Outcomes saved before have no text
-- (NULL): their fingerprint took the instant to the millisecond, and a repeat is compared so.
ALTER TABLE business_outcomes
  ADD COLUMN occurred_at_text text CHECK (char_length(occurred_at_text) BETWEEN 20 AND 35);
