/**
 * The performance-import worker: for each import on the bus it reads the input, parses (CSV) and
 * checks every row, and in one transaction saves all rows and marks the import completed, or
 * saves none and marks it failed with the rows it refused. Rows are sent to PostgreSQL while the
 * rest are still being parsed; a refused row rolls them back (to a savepoint). Nothing is partly
 * saved; a repeated delivery finds the import finished and does nothing.
 */
import type { Delivery, GiveUpReason, HandlerContext } from '@adsmcp/runtime/bus/bus';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import { parsePerformanceCsv } from '../domain/performance-csv.ts';
import { type NormalRow, normaliseStoredRows, RowErrors } from '../domain/performance-import.ts';
import {
  claimInput,
  completeImport,
  failImport,
  findInput,
  type ImportInputRecord,
  importStatus,
  lockStatus,
  openRowCopy,
} from '../store/import-store.ts';
import { enqueueImportFinished } from './webhook-events.ts';

/** The bus topic of performance imports. */
export const IMPORT_TOPIC = 'marketing.performance-import';

export interface ImportMessage {
  workspace_id: string;
  import_id: string;
}

export interface ImportWorkerDeps {
  pool: Pool;
  logger: Logger;
  /**
   * Whether an import's end is announced to the workspace's webhooks (import.finished): only when
   * this service can hand the event to the changes service, so the outbox holds nothing no one reads.
   */
  announce?: boolean;
}

/**
 * Reads and checks the input's rows, handing the good ones to `sink` while no row was refused;
 * returns how many rows were read.
 */
async function readRows(
  input: ImportInputRecord,
  errors: RowErrors,
  sink: (rows: NormalRow[]) => Promise<void>,
): Promise<number> {
  if (input.format === 'csv') {
    return (await parsePerformanceCsv(input.input_csv ?? '', input.column_mapping, errors, sink)).rowCount;
  }
  const stored = input.input_rows ?? [];
  const rows = normaliseStoredRows(stored, errors);
  if (errors.count === 0) await sink(rows);
  return stored.length;
}

export function createImportHandler(d: ImportWorkerDeps) {
  return async (message: Delivery<ImportMessage>, ctx: HandlerContext): Promise<void> => {
    const { workspace_id: workspaceId, import_id: importId } = message.payload;
    const started = performance.now();
    const input = await claimInput(d.pool, workspaceId, importId);
    if (input === undefined) {
      const status = await importStatus(d.pool, workspaceId, importId);
      d.logger.info({ import_id: importId, status }, 'import skipped: it is not waiting');
      return;
    }
    await run(d, ctx, workspaceId, importId, input, started);
  };
}

/**
 * createImportGiveUp returns the give-up path of import messages (past their last attempt, which
 * failed or never reported back): the import says so, rather than stay running for ever.
 */
export function createImportGiveUp(d: Pick<ImportWorkerDeps, 'pool' | 'logger' | 'announce'>) {
  return async (
    message: Delivery<ImportMessage>,
    ctx: HandlerContext,
    reason: GiveUpReason,
  ): Promise<void> => {
    const { workspace_id: workspaceId, import_id: importId } = message.payload;
    const input = await findInput(d.pool, workspaceId, importId);
    if (input === undefined || input.status === 'completed' || input.status === 'failed') return;
    d.logger.error(
      { err: reason.kind === 'failed' ? reason.error : reason.detail, import_id: importId },
      'performance import gave up',
    );
    const why =
      reason.kind === 'abandoned'
        ? 'its processing stopped before it finished (the worker was stopped or killed)'
        : 'it failed each time';
    await ctx.inTx(async (tx) => {
      await failImport(tx, workspaceId, importId, {
        rowCount: 0,
        errorCount: 1,
        errors: [
          {
            row: 0,
            message: `the import could not be processed after ${message.attempt} attempts (${why}); import it again`,
          },
        ],
        gaveUp: true,
      });
      if (d.announce === true) await enqueueImportFinished(tx, workspaceId, importId);
    });
  };
}

async function run(
  d: ImportWorkerDeps,
  ctx: HandlerContext,
  workspaceId: string,
  importId: string,
  input: ImportInputRecord,
  started: number,
): Promise<void> {
  const errors = new RowErrors();
  // Rows are saved while the rest are read (one COPY); a refused row rolls the saved ones back.
  const rowCount = await ctx.inTx(async (tx) => {
    if ((await lockStatus(tx, workspaceId, importId)) !== 'running') return 0;
    await tx.query('SAVEPOINT import_rows');
    const copy = openRowCopy(tx, workspaceId, importId);
    let read: number;
    try {
      read = await readRows(input, errors, (rows) => copy.write(rows));
    } catch (err) {
      await copy.abort(err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    await copy.end();
    if (errors.count > 0) {
      await tx.query('ROLLBACK TO SAVEPOINT import_rows');
      await failImport(tx, workspaceId, importId, {
        rowCount: read,
        errorCount: errors.count,
        errors: errors.listed,
      });
      if (d.announce === true) await enqueueImportFinished(tx, workspaceId, importId);
      return read;
    }
    await completeImport(tx, workspaceId, importId, read);
    if (d.announce === true) await enqueueImportFinished(tx, workspaceId, importId);
    return read;
  });
  d.logger.info(
    {
      import_id: importId,
      rows: rowCount,
      errors: errors.count,
      work_ms: Math.round(performance.now() - started),
    },
    'performance import finished',
  );
}
