/**
 * Planning a workbook off the event loop: each workbook (an XLSX file, or JSON rows) is read and
 * compiled in its own worker thread (workbook-worker.ts) with a memory cap and a deadline, at most
 * two at a time, so a hostile or merely large workbook slows no other request of this service and
 * cannot exhaust its memory.
 */
import { Worker } from 'node:worker_threads';
import { InvalidArgumentError, UnavailableError } from '@adsmcp/runtime/errors';
import type { BulkAccount, BulkPlan, RowIssue, Sheets } from './domain/bulk-job-rules.ts';
import type { WorkbookAnswer, WorkbookTask } from './workbook-worker.ts';

const DEADLINE_MS = 20_000;
const MAX_PARALLEL = 2;
const MAX_WAITING = 8;

/** The worker's file beside this one: TypeScript from source, JavaScript once bundled. */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(FROM_SOURCE ? './workbook-worker.ts' : './workbook-worker.js', import.meta.url);

/**
 * How a worker starts. Run from source, the worker registers the TypeScript loader itself first:
 * Node 20 does not carry the parent's `--import` hooks into worker threads.
 */
function newWorker(task: WorkbookTask): Worker {
  const options = {
    workerData: task,
    resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32 },
  };
  if (!FROM_SOURCE) return new Worker(WORKER_URL, options);
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); })`;
  return new Worker(boot, { ...options, eval: true });
}

let running = 0;
const waiting: (() => void)[] = [];

async function slot(): Promise<() => void> {
  if (running >= MAX_PARALLEL) {
    if (waiting.length >= MAX_WAITING)
      throw new UnavailableError('too many workbooks are being read just now; try again shortly');
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  running += 1;
  return () => {
    running -= 1;
    waiting.shift()?.();
  };
}

type Planned = { plan: BulkPlan; issues: RowIssue[] };

function inWorker(task: WorkbookTask): Promise<Planned> {
  return new Promise((resolve, reject) => {
    const worker = newWorker(task);
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(
        new InvalidArgumentError(
          `workbook_base64: the workbook took longer than ${DEADLINE_MS / 1000} s to read`,
        ),
      );
    }, DEADLINE_MS);
    const done = () => {
      clearTimeout(timer);
      void worker.terminate();
    };
    worker.once('message', (answer: WorkbookAnswer) => {
      done();
      if ('refused' in answer) reject(new InvalidArgumentError(answer.refused));
      else resolve(answer);
    });
    worker.once('error', (err: Error & { code?: string }) => {
      done();
      reject(
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new InvalidArgumentError('workbook_base64: the workbook needs too much memory to read')
          : err,
      );
    });
    worker.once('exit', (code) => {
      done();
      reject(new UnavailableError(`the workbook reader stopped (exit code ${code}); try again`));
    });
  });
}

/** decodeBase64 is the XLSX file of `workbook_base64`, refusing text that is not base64. */
function decodeBase64(base64: string): Uint8Array {
  const text = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0)
    throw new InvalidArgumentError('workbook_base64 must be base64 (RFC 4648, with padding)');
  return new Uint8Array(Buffer.from(text, 'base64'));
}

/**
 * planWorkbook compiles a workbook, given as base64 XLSX or as JSON rows, into the paused bulk job
 * for `account`, in a worker thread; it returns the plan and the issues of the refused rows.
 */
export async function planWorkbook(
  input: { base64: string } | { sheets: Sheets },
  account: BulkAccount,
  flags: WorkbookTask['flags'],
): Promise<Planned> {
  const task: WorkbookTask = {
    ...('base64' in input ? { xlsx: decodeBase64(input.base64) } : { sheets: input.sheets }),
    account: { name: account.name, currency: account.currency, timeZone: account.timeZone },
    flags,
  };
  const release = await slot();
  try {
    return await inWorker(task);
  } finally {
    release();
  }
}
