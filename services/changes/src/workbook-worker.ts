/**
 * The worker thread that plans one workbook, off the service's event loop: an XLSX file is checked
 * within its limits (domain/workbook-file.ts) and parsed by read-excel-file with numbers kept as
 * their decimal text (exact money); its rows, or rows given as JSON, are then compiled into the
 * paused bulk job. It answers with the plan and the rows' issues, or with why it refused.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import readXlsxFile from 'read-excel-file/node';
import { type BulkAccount, compileBulkJob, type Sheets } from './domain/bulk-job-rules.ts';
import { type Cell, checkedWorkbook, sheetsFromTabs } from './domain/workbook-file.ts';

/** What a worker is given: an XLSX file or JSON rows, the account, and the job's flags. */
export interface WorkbookTask {
  xlsx?: Uint8Array;
  sheets?: Sheets;
  account: BulkAccount;
  flags: { validateOnly: boolean; partialFailure: boolean };
}

export type WorkbookAnswer = ReturnType<typeof compileBulkJob> | { refused: string };

async function rowsOf(task: WorkbookTask): Promise<Sheets> {
  if (task.xlsx === undefined) return task.sheets ?? { campaigns: [], adgroups: [], ads: [] };
  const checked = checkedWorkbook(task.xlsx);
  let tabs: unknown;
  try {
    // Cells are read as written: the rules trim the spaces around a name or a title themselves,
    // and keep a context hint's (one per line of its cell) as given.
    tabs = await readXlsxFile<string>(Buffer.from(checked), { parseNumber: (s) => s, trim: false });
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    throw new InvalidArgumentError(`workbook_base64: the workbook cannot be read as XLSX (${reason})`);
  }
  return sheetsFromTabs(tabs as { sheet: string; data: Cell[][] }[]);
}

async function plan(task: WorkbookTask): Promise<WorkbookAnswer> {
  try {
    return compileBulkJob(await rowsOf(task), task.account, task.flags);
  } catch (e) {
    if (e instanceof InvalidArgumentError || e instanceof FailedPreconditionError)
      return { refused: e.message };
    throw e;
  }
}

const port = parentPort;
if (port !== null) {
  plan(workerData as WorkbookTask).then(
    (answer) => port.postMessage(answer),
    (e: unknown) => port.postMessage({ refused: `the workbook could not be planned: ${String(e)}` }),
  );
}
