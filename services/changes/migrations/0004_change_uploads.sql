-- The campaign assets a change uploads when it is applied, as pinned when it was prepared (asset
-- id, name, type, size, dimensions, sha256), each with the platform's file id once uploaded ('').
-- A change recorded before this column uploads nothing.
ALTER TABLE changes ADD COLUMN uploads jsonb NOT NULL DEFAULT '[]'::jsonb;
