/**
 * The worker thread that reads one XLSX workbook, off the service's event loop: the archive is
 * checked within its limits (domain/workbook-file.ts), then parsed by read-excel-file with numbers
 * kept as their decimal text (exact money). It answers with the rows, or with why it refused.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import readXlsxFile from 'read-excel-file/node';
import { type Cell, checkedWorkbook, sheetsFromTabs } from './domain/workbook-file.ts';

export type WorkbookAnswer = { sheets: ReturnType<typeof sheetsFromTabs> } | { refused: string };

async function read(bytes: Uint8Array): Promise<WorkbookAnswer> {
  try {
    const checked = checkedWorkbook(bytes);
    const tabs = await readXlsxFile<string>(Buffer.from(checked), { parseNumber: (s) => s, trim: true });
    return { sheets: sheetsFromTabs(tabs as unknown as { sheet: string; data: Cell[][] }[]) };
  } catch (e) {
    if (e instanceof InvalidArgumentError) return { refused: e.message };
    const reason = e instanceof Error ? e.message : String(e);
    return { refused: `workbook_base64: the workbook cannot be read as XLSX (${reason})` };
  }
}

const port = parentPort;
if (port !== null) {
  read(workbookData(workerData)).then(
    (answer) => port.postMessage(answer),
    (e: unknown) => port.postMessage({ refused: `workbook_base64: ${String(e)}` }),
  );
}

function workbookData(data: unknown): Uint8Array {
  return data instanceof Uint8Array ? data : new Uint8Array();
}
