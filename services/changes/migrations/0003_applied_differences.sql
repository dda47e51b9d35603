-- What was reviewed, as the fields the applied object should have (JSON text; '{}' for a change
-- whose answer is another object, and for changes recorded before this column), and, once applied,
-- where the platform's answer differed from it: one line per field, empty when it matched.
ALTER TABLE changes
  ADD COLUMN reviewed_result_json text NOT NULL DEFAULT '{}',
  ADD COLUMN applied_differences jsonb NOT NULL DEFAULT '[]'::jsonb;
