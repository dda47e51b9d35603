/**
 * What end-to-end tests do with tools, written once: call a tool and read its structured result,
 * require it to succeed or to fail, wait for a change to reach a status, and read the sandbox's
 * ledger of the mutations it applied (the witness that nothing was lost or doubled).
 */
import assert from 'node:assert/strict';
import type { McpTestClient } from './mcp-clients.ts';
import type { Stack } from './stack.ts';

export interface ToolCalls {
  call(
    name: string,
    args?: Record<string, unknown>,
    client?: McpTestClient,
  ): Promise<{ isError: boolean; data: Record<string, unknown> }>;
  /** The result of a call that must succeed. */
  ok<T>(name: string, args?: Record<string, unknown>, client?: McpTestClient): Promise<T>;
  /** The error of a call that must fail. */
  refused(
    name: string,
    args?: Record<string, unknown>,
    client?: McpTestClient,
  ): Promise<{ code: string; message: string }>;
  /** Reads a change until its status is one of `want` (or the time is up) and returns it. */
  waitForChange<T extends { status: string }>(
    changeId: string,
    want: string[],
    timeoutMs?: number,
  ): Promise<T>;
}

/** toolCalls makes calls with `client()` (read when called, so a test may connect it in `before`). */
export function toolCalls(client: () => McpTestClient): ToolCalls {
  const call: ToolCalls['call'] = async (name, args = {}, c = client()) => {
    const res = await c.callTool(name, args);
    return { isError: res.isError === true, data: res.structuredContent as Record<string, unknown> };
  };
  const ok = async <T>(name: string, args: Record<string, unknown> = {}, c = client()): Promise<T> => {
    const res = await call(name, args, c);
    assert.equal(res.isError, false, `${name} failed: ${JSON.stringify(res.data)}`);
    return res.data as T;
  };
  return {
    call,
    ok,
    async refused(name, args = {}, c = client()) {
      const res = await call(name, args, c);
      assert.equal(res.isError, true, `${name} was expected to fail: ${JSON.stringify(res.data)}`);
      return (res.data as { error: { code: string; message: string } }).error;
    },
    async waitForChange<T extends { status: string }>(changeId: string, want: string[], timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const c = await ok<T>('ads_get_change', { change_id: changeId });
        if (want.includes(c.status) || Date.now() > deadline) return c;
        await new Promise((r) => setTimeout(r, 250));
      }
    },
  };
}

/** One mutation the sandbox applied. */
export interface LedgerEntry {
  method: string;
  path: string;
  idempotency_key: string | null;
  request_body: unknown;
}

/** The sandbox's ledger of mutations applied to an account (by its platform id), for one path. */
export async function sandboxLedger(
  stack: Stack,
  upstreamAccountId: string,
  path: string,
): Promise<LedgerEntry[]> {
  const res = await fetch(
    `${stack.urls['ads-sandbox']}/_sandbox/ledger?account_id=${encodeURIComponent(upstreamAccountId)}`,
    { headers: { authorization: `Bearer ${stack.secrets.sandboxAdminToken}` } },
  );
  assert.equal(res.status, 200);
  const { entries } = (await res.json()) as { entries: LedgerEntry[] };
  return entries.filter((e) => e.path === path);
}
