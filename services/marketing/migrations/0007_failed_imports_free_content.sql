-- A failed import no longer stands for its content: importing the same content again is a new
-- import (its rows read anew), while a queued, running or completed one is still the answer to
-- its content. Before, only an import the worker gave up on was left out (gave_up), so a CSV that
-- failed once answered every later import of the same text with that failure.
DROP INDEX performance_imports_content;
CREATE UNIQUE INDEX performance_imports_content ON performance_imports (workspace_id, content_hash)
  WHERE status <> 'failed';
