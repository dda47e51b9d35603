/**
 * Structured logs (pino). The request id of the call being served is carried in an
 * AsyncLocalStorage, so every line logged while serving it carries `request_id` without
 * threading a logger through each function.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { type Logger, pino } from 'pino';

export type { Logger };

const requestContext = new AsyncLocalStorage<{ requestId: string }>();

/** The request id of the call being served, if any. */
export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}

/** Runs `fn` with `requestId` as the current request id. */
export function withRequestId<T>(requestId: string, fn: () => T): T {
  return requestContext.run({ requestId }, fn);
}

/**
 * createLogger builds the process logger; `LOG_LEVEL` sets the level (default info). Lines are
 * written to stdout asynchronously, so a request never waits on the pipe; pino flushes what is
 * buffered when the process exits.
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin() {
        const id = currentRequestId();
        return id === undefined ? {} : { request_id: id };
      },
      redact: {
        paths: ['token', 'authorization', '*.token', '*.authorization', 'password', '*.password'],
        remove: true,
      },
    },
    pino.destination({ dest: 1, sync: false }),
  );
}
