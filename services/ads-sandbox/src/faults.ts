/**
 * Switchable faults for tests: an operator queues a fault for an account, and the next `count`
 * platform requests of that account that match its method and path prefix suffer it. Kept in
 * memory, per process; a request suffers at most one fault, the oldest that matches.
 */

export const FAULT_KINDS = [
  'status_500',
  'rate_limit',
  'delay',
  'fail_after_commit',
  'ignore_field',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultSpec {
  accountId: string;
  /** Only requests with this method; any method when undefined. */
  method: 'GET' | 'POST' | undefined;
  /** Only requests whose path starts with this; any path when undefined. */
  pathPrefix: string | undefined;
  kind: FaultKind;
  /** How many matching requests suffer the fault. */
  count: number;
  /** For `rate_limit`: the `Retry-After` to answer with. */
  retryAfterSeconds: number;
  /** For `delay`: how long to wait before handling the request. */
  delayMs: number;
  /**
   * For `ignore_field`: the top-level field of the request body the platform quietly drops before
   * handling a request it then answers with success, as a platform that ignores a field does.
   */
  field: string | undefined;
}

export interface Fault extends FaultSpec {
  id: number;
  /** Matching requests still to suffer the fault. */
  remaining: number;
}

export interface FaultQueue {
  add(spec: FaultSpec): Fault;
  /** take consumes one use of the oldest fault matching the request, if any. */
  take(accountId: string, method: string, path: string): Fault | undefined;
  /** clear removes every queued fault and returns how many there were. */
  clear(): number;
}

/** createFaultQueue returns an empty in-memory fault queue. */
export function createFaultQueue(): FaultQueue {
  let faults: Fault[] = [];
  let nextId = 1;
  return {
    add(spec) {
      const fault: Fault = { ...spec, id: nextId++, remaining: spec.count };
      faults.push(fault);
      return { ...fault };
    },
    take(accountId, method, path) {
      const fault = faults.find(
        (f) =>
          f.accountId === accountId &&
          (f.method === undefined || f.method === method) &&
          (f.pathPrefix === undefined || path.startsWith(f.pathPrefix)),
      );
      if (fault === undefined) return undefined;
      fault.remaining -= 1;
      if (fault.remaining <= 0) faults = faults.filter((f) => f !== fault);
      return { ...fault };
    },
    clear() {
      const n = faults.length;
      faults = [];
      return n;
    },
  };
}
