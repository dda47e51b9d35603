-- Image files an account uploaded (POST /files), whose ids go into an ad's creative.file_id.
-- Metadata only: the bytes are checked, measured and hashed when they arrive and then dropped,
-- since nothing in the sandbox reads a file back (a real platform keeps them to serve the ad).
-- The id is derived from the account and the bytes' SHA-256, so one account's identical uploads
-- are one file, as platforms deduplicate images by their hash.
CREATE TABLE files (
  id text PRIMARY KEY CHECK (id ~ '^file_[0-9a-f]{24}$'),
  account_id text NOT NULL REFERENCES accounts (id),
  mime_type text NOT NULL CHECK (mime_type IN ('image/png', 'image/jpeg')),
  byte_size integer NOT NULL CHECK (byte_size BETWEEN 1 AND 5242880),
  width integer NOT NULL CHECK (width > 0),
  height integer NOT NULL CHECK (height > 0),
  -- Hex SHA-256 of the bytes as uploaded.
  sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  -- From the sandbox clock, which tests fake.
  created_at timestamptz NOT NULL
);
