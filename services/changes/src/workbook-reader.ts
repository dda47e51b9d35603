/**
 * Reading a workbook off the event loop: each workbook is read in its own worker thread
 * (workbook-worker.ts) with a memory cap and a deadline, at most two at a time, so a hostile or
 * merely large file slows no other request of this service and cannot exhaust its memory.
 */
import { Worker } from 'node:worker_threads';
import { InvalidArgumentError, UnavailableError } from '@adsmcp/runtime/errors';
import type { Sheets } from './domain/bulk-job-rules.ts';
import type { WorkbookAnswer } from './workbook-worker.ts';

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
function newWorker(bytes: Uint8Array): Worker {
  const options = {
    workerData: bytes,
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

function inWorker(bytes: Uint8Array): Promise<Sheets> {
  return new Promise((resolve, reject) => {
    const worker = newWorker(bytes);
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
      else resolve(answer.sheets);
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

/** readWorkbook decodes base64 XLSX and reads its campaigns, adgroups and ads sheets in a worker thread. */
export async function readWorkbook(base64: string): Promise<Sheets> {
  const text = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0)
    throw new InvalidArgumentError('workbook_base64 must be base64 (RFC 4648, with padding)');
  const bytes = new Uint8Array(Buffer.from(text, 'base64'));
  const release = await slot();
  try {
    return await inWorker(bytes);
  } finally {
    release();
  }
}
