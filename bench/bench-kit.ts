/** What the benchmarks share: a tool call as an MCP client posts it, and a process's descendants. */
import { readdir, readFile } from 'node:fs/promises';

/**
 * toolCaller returns a function calling a tool through the gateway at `mcpUrl` with `token`, as a
 * stateless MCP client posts it (JSON or one server-sent event); it resolves with the structured
 * result and throws on a tool error.
 */
export function toolCaller(mcpUrl: string) {
  let rpcId = 0;
  return async (token: string, name: string, args: object): Promise<Record<string, unknown>> => {
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++rpcId,
        method: 'tools/call',
        params: { name, arguments: args },
      }),
    });
    const text = await res.text();
    const line = text.split('\n').find((l) => l.startsWith('data: '));
    const msg = JSON.parse(line ? line.slice(6) : text) as {
      result?: { structuredContent?: Record<string, unknown>; isError?: boolean };
    };
    if (!msg.result?.structuredContent || msg.result.isError)
      throw new Error(`${name} failed: ${text.slice(0, 300)}`);
    return msg.result.structuredContent;
  };
}

/** Every process descended from `root`, itself included, from /proc. */
export async function processTree(root: number): Promise<number[]> {
  const parentOf = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // The command name may hold spaces; the parent id follows its closing parenthesis.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (Number.isInteger(ppid)) parentOf.set(pid, ppid);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++)
    for (const [pid, ppid] of parentOf) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/**
 * The CPU time (user and system, in ms) each process has used so far, by pid, with its command
 * name, for every process descended from `root`: read twice, the difference is what a stretch of
 * work cost each one, whatever else the machine runs meanwhile.
 */
export async function cpuTimes(root: number): Promise<Map<number, { comm: string; ms: number }>> {
  const ticksPerMs = 100 / 1000; // USER_HZ: 100 on Linux whatever the kernel's own tick.
  const out = new Map<number, { comm: string; ms: number }>();
  for (const pid of await processTree(root)) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    // After the command name: state, ppid, ... utime is field 14 and stime 15 of the whole line.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(pid, { comm, ms: (Number(fields[11]) + Number(fields[12])) / ticksPerMs });
  }
  return out;
}

/** The middle value of `values` (the upper of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** A whole number from the environment, within bounds; anything else stops the run, naming it. */
export function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  return n;
}

/** The CPU ms (user and system) process `pid` has used so far, from /proc (Linux counts 1/100 s ticks); 0 if it is gone. */
export async function processCpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (stat === '') return 0;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * The stack's rate limits lifted (the MCP edge's, the upstream-proxy's budget and the sandbox's),
 * for a bench that measures the processes rather than the limits.
 */
export const UNLIMITED_RATES: Readonly<Record<string, string>> = {
  MCP_RATE_PER_SECOND: '100000',
  MCP_RATE_BURST: '100000',
  UPSTREAM_RATE_PER_SECOND: '100000',
  UPSTREAM_BURST: '100000',
  SANDBOX_RATE_PER_SECOND: '100000',
};
