-- A change whose apply ended with its outcome unknown (sent, no answer from the platform) can be
-- applied again, sent with the same idempotency key: who asked for that, and when (the latest time).
ALTER TABLE changes
  ADD COLUMN apply_retried_by text,
  ADD COLUMN apply_retried_at timestamptz;
