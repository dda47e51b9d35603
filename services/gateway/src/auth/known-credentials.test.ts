import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Caller } from '../catalogue/catalogue.ts';
import { KnownCredentials } from './known-credentials.ts';

const caller = (credentialId: string, workspaceId = 'w1') =>
  ({ principal: { credentialId, workspaceId } }) as unknown as Caller;
const hash = (s: string) => Buffer.from(s);

test('a credential found valid is fresh for the window, then known but to be checked again', () => {
  let now = 0; // a fake clock, in ms
  const known = new KnownCredentials(5000, 10, () => now);
  known.setHeard(true);
  known.remember(hash('a'), caller('c1'));
  assert.equal(known.get(hash('a'))?.fresh, true);
  now += 5000;
  assert.equal(known.get(hash('a'))?.fresh, false);
  assert.equal(known.get(hash('b')), undefined);
});

test('forgetting a credential forgets every token of it, and only those', () => {
  const known = new KnownCredentials(5000, 10, () => 0);
  known.remember(hash('a'), caller('c1'));
  known.remember(hash('b'), caller('c2'));
  known.forgetCredential('c1');
  assert.equal(known.get(hash('a')), undefined);
  assert.equal(known.get(hash('b'))?.caller.principal.credentialId, 'c2');
});

test('the least recently used entry goes first when the cache is full', () => {
  const known = new KnownCredentials(5000, 2, () => 0);
  known.remember(hash('a'), caller('c1'));
  known.remember(hash('b'), caller('c2'));
  known.get(hash('a'));
  known.remember(hash('c'), caller('c3'));
  assert.equal(known.get(hash('b')), undefined);
  assert.ok(known.get(hash('a')));
  assert.ok(known.get(hash('c')));
});

test('a change announced for a workspace forgets its credentials, and only those', () => {
  const known = new KnownCredentials(5000, 10, () => 0);
  known.setHeard(true);
  known.remember(hash('a'), caller('c1', 'w1'));
  known.remember(hash('b'), caller('c2', 'w2'));
  known.forgetWorkspace('w1');
  assert.equal(known.get(hash('a')), undefined);
  assert.equal(known.get(hash('b'))?.fresh, true);
});

test('while changes made elsewhere cannot be heard, nothing is fresh, and what was known is forgotten', () => {
  const known = new KnownCredentials(5000, 10, () => 0);
  known.remember(hash('a'), caller('c1'));
  assert.equal(known.get(hash('a'))?.fresh, false, 'not fresh before the announcements are heard');
  known.setHeard(true);
  assert.equal(known.get(hash('a'))?.fresh, true);
  known.setHeard(false);
  assert.equal(known.get(hash('a')), undefined);
});
