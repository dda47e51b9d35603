/**
 * A bounded closed-loop load: `concurrency` keep-alive connections, each sending its next request
 * as soon as the last one's answer is in, for `durationMs`.
 *
 * The load is sent by autocannon (one request in flight per connection). The load generator runs
 * on the same two cores as the processes it measures, so what it costs per call is taken from
 * them: autocannon writes prepared request bytes and parses answers with little work, where a
 * client built on node:http spent about twice its CPU per call (it is printed beside the figures).
 */
import autocannon from 'autocannon';

export interface LoadResult {
  calls: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface LoadRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Whether an answer's body is the one expected; one that is not counts as an error. */
  verify: (body: string) => boolean;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] as number;
}

/**
 * runLoad sends `request` over `concurrency` connections for `durationMs`. A call counts as an
 * error when its connection failed or timed out, its status was not 2xx, or `verify` refused its
 * body. Latencies are those of every answer, to the microsecond (autocannon's own histogram
 * keeps whole milliseconds).
 */
export async function runLoad(
  concurrency: number,
  durationMs: number,
  request: LoadRequest,
): Promise<LoadResult> {
  const latencies: number[] = [];
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: request.url,
        method: 'POST',
        headers: request.headers,
        body: request.body,
        connections: concurrency,
        pipelining: 1,
        duration: durationMs / 1000,
        timeout: 30,
        verifyBody: (body) => request.verify(String(body)),
      },
      (err: unknown, done: autocannon.Result) => (err ? reject(err) : resolve(done)),
    );
    instance.on('response', (_client, _status, _bytes, responseTime: number) => {
      latencies.push(responseTime);
    });
  });
  const sorted = Float64Array.from(latencies).sort();
  const seconds = result.duration;
  return {
    calls: latencies.length,
    errors: result.errors + result.non2xx + result.mismatches,
    seconds,
    perSecond: latencies.length / seconds,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? Number.NaN,
  };
}

export function formatResult(label: string, r: LoadResult): string {
  const f = (n: number) => n.toFixed(2);
  return `${label.padEnd(44)} ${r.perSecond.toFixed(0).padStart(6)} calls/s   p50 ${f(r.p50Ms)} ms   p90 ${f(r.p90Ms)} ms   p99 ${f(r.p99Ms)} ms   max ${f(r.maxMs)} ms   (${r.calls} calls, ${r.errors} errors, ${r.seconds.toFixed(1)} s)`;
}
