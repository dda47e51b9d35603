import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  hashPassword,
  hashToken,
  looksLikeToken,
  newToken,
  parseLifetime,
  verifyPassword,
} from './credentials.ts';

test('a new token has our shape and is stored only as its SHA-256', () => {
  const { token, hash } = newToken();
  assert.ok(looksLikeToken(token));
  assert.equal(hash.length, 32);
  assert.deepEqual(hash, hashToken(token));
  assert.ok(!hash.toString('utf8').includes(token));
  assert.notEqual(newToken().token, token);
});

test('passwords verify only against their own hash', async () => {
  const stored = await hashPassword('correct horse battery');
  assert.match(stored, /^scrypt\$/);
  assert.equal(await verifyPassword('correct horse battery', stored), true);
  assert.equal(await verifyPassword('correct horse batterY', stored), false);
  assert.equal(await verifyPassword('x', 'garbage'), false);
});

test('lifetimes parse days, hours, minutes and never; anything else is refused', () => {
  assert.equal(parseLifetime('30d'), 30 * 86_400_000);
  assert.equal(parseLifetime('12h'), 12 * 3_600_000);
  assert.equal(parseLifetime('45m'), 45 * 60_000);
  assert.equal(parseLifetime('never'), undefined);
  assert.throws(() => parseLifetime('1y'), /30d, 12h, 45m or never/);
});
