/** Who the changes service's tests act as, and how they read a refusal. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Principal } from '@adsmcp/runtime/principal';
import { type Code, ConnectError } from '@connectrpc/connect';

/**
 * personIn returns a maker of principals of `workspaceId`: an editor's agent through MCP unless
 * `over` says otherwise, each with a user of its own.
 */
export function personIn(workspaceId: string) {
  return (over: Partial<Principal> = {}): Principal => ({
    workspaceId,
    credentialId: 'cred',
    userId: randomUUID(),
    role: 'editor',
    scopes: ['read', 'write'],
    via: 'mcp',
    ...over,
  });
}

/** The code and message a call was refused with; fails the test when it was not refused. */
export async function refusal(p: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
  assert.fail('the call was expected to be refused');
}
