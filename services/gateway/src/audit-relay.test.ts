import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REMEMBERED_WORKSPACES, remember } from './audit-relay.ts';

test('the relay remembers at most REMEMBERED_WORKSPACES positions, forgetting the least recently relayed', () => {
  const relayed = new Map<string, bigint>();
  for (let i = 0; i < REMEMBERED_WORKSPACES; i++) remember(relayed, `w${i}`, BigInt(i));
  // w0 is relayed again: it becomes the most recent, so w1 is the one forgotten next.
  remember(relayed, 'w0', 42n);
  remember(relayed, 'new', 1n);
  assert.equal(relayed.size, REMEMBERED_WORKSPACES);
  assert.equal(relayed.get('w0'), 42n);
  assert.equal(relayed.has('w1'), false);
  assert.equal(relayed.get('new'), 1n);
  assert.equal(relayed.get('w2'), 2n);
});
