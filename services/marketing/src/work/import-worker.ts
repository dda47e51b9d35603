/**
 * The performance-import worker: for each import on the bus it reads the input, parses (CSV) and
 * checks every row, then in one transaction saves all rows and marks the import completed, or
 * saves none and marks it failed with the rows it refused. Nothing is partly saved; a repeated
 * delivery finds the import finished and does nothing.
 */
import type { Delivery, HandlerContext } from '@adsmcp/runtime/bus/bus';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import { parsePerformanceCsv } from '../domain/performance-csv.ts';
import { type NormalRow, normaliseStoredRows, RowErrors } from '../domain/performance-import.ts';
import {
  completeImport,
  failImport,
  findInput,
  type ImportInputRecord,
  insertRows,
  lockStatus,
  markRunning,
  totalsOf,
} from '../store/import-store.ts';

/** The bus topic of performance imports. */
export const IMPORT_TOPIC = 'marketing.performance-import';

export interface ImportMessage {
  workspace_id: string;
  import_id: string;
}

export interface ImportWorkerDeps {
  pool: Pool;
  logger: Logger;
  /** Deliveries before the bus parks the message; the last one marks the import failed. */
  maxAttempts: number;
}

async function readRows(
  input: ImportInputRecord,
  errors: RowErrors,
): Promise<{ rows: NormalRow[]; rowCount: number }> {
  if (input.format === 'csv') return parsePerformanceCsv(input.input_csv ?? '', input.column_mapping, errors);
  const stored = input.input_rows ?? [];
  const rows = normaliseStoredRows(stored, errors);
  return { rows, rowCount: stored.length };
}

export function createImportHandler(d: ImportWorkerDeps) {
  return async (message: Delivery<ImportMessage>, ctx: HandlerContext): Promise<void> => {
    const { workspace_id: workspaceId, import_id: importId } = message.payload;
    const input = await findInput(d.pool, workspaceId, importId);
    if (input === undefined || input.status === 'completed' || input.status === 'failed') {
      d.logger.info({ import_id: importId, status: input?.status }, 'import skipped: it is not waiting');
      return;
    }
    try {
      await run(d, ctx, workspaceId, importId, input);
    } catch (err) {
      if (message.attempt < d.maxAttempts) throw err;
      // The last delivery: say so on the import rather than leave it running for ever.
      d.logger.error({ err, import_id: importId }, 'performance import gave up');
      await failImport(d.pool, workspaceId, importId, {
        rowCount: 0,
        errorCount: 1,
        errors: [
          {
            row: 0,
            message: `the import could not be processed after ${message.attempt} attempts; import it again`,
          },
        ],
        gaveUp: true,
      });
    }
  };
}

async function run(
  d: ImportWorkerDeps,
  ctx: HandlerContext,
  workspaceId: string,
  importId: string,
  input: ImportInputRecord,
): Promise<void> {
  await markRunning(d.pool, workspaceId, importId);
  const errors = new RowErrors();
  const started = performance.now();
  const { rows, rowCount } = await readRows(input, errors);
  const read = performance.now();
  await ctx.inTx(async (tx) => {
    const status = await lockStatus(tx, workspaceId, importId);
    if (status !== 'running') return;
    if (errors.count > 0) {
      await failImport(tx, workspaceId, importId, {
        rowCount,
        errorCount: errors.count,
        errors: errors.listed,
      });
      return;
    }
    await insertRows(tx, workspaceId, importId, rows);
    await completeImport(tx, workspaceId, importId, rowCount, await totalsOf(tx, workspaceId, importId));
  });
  d.logger.info(
    {
      import_id: importId,
      rows: rowCount,
      errors: errors.count,
      read_ms: Math.round(read - started),
      save_ms: Math.round(performance.now() - read),
    },
    'performance import finished',
  );
}
