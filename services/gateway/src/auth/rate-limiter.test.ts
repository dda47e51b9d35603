import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimiter } from './rate-limiter.ts';

test('a credential gets its burst, then waits for the refill it is told about', () => {
  let now = 0; // a fake clock, in ms
  const limiter = new RateLimiter(2, 3, () => now);
  for (let i = 0; i < 3; i++) assert.equal(limiter.take('a').allowed, true);
  const refused = limiter.take('a');
  assert.deepEqual(refused, { allowed: false, retryAfterSeconds: 1 });
  now += 500; // one token refilled at 2/s
  assert.equal(limiter.take('a').allowed, true);
  assert.equal(limiter.take('a').allowed, false);
});

test('credentials have separate buckets', () => {
  const now = 0;
  const limiter = new RateLimiter(1, 1, () => now);
  assert.equal(limiter.take('a').allowed, true);
  assert.equal(limiter.take('a').allowed, false);
  assert.equal(limiter.take('b').allowed, true);
});

test('a slow refill reports the whole seconds to wait', () => {
  const limiter = new RateLimiter(0.1, 1, () => 0);
  limiter.take('a');
  assert.deepEqual(limiter.take('a'), { allowed: false, retryAfterSeconds: 10 });
});

test('peek tells what take would decide without taking', () => {
  let now = 0;
  const limiter = new RateLimiter(1, 1, () => now);
  assert.equal(limiter.peek('a').allowed, true);
  assert.equal(limiter.peek('a').allowed, true, 'peeking takes nothing');
  limiter.take('a');
  assert.deepEqual(limiter.peek('a'), { allowed: false, retryAfterSeconds: 1 });
  now += 1000;
  assert.equal(limiter.peek('a').allowed, true);
});

test('a cost takes that many tokens at once, or none', () => {
  const limiter = new RateLimiter(1, 5, () => 0);
  assert.equal(limiter.take('a', 3).allowed, true);
  assert.deepEqual(limiter.take('a', 3), { allowed: false, retryAfterSeconds: 1 });
  assert.equal(limiter.take('a', 2).allowed, true, 'the refused take took nothing');
});

test('give returns what take took, never beyond the burst', () => {
  const limiter = new RateLimiter(1, 2, () => 0);
  limiter.take('a');
  limiter.take('a');
  assert.equal(limiter.peek('a').allowed, false);
  limiter.give('a');
  assert.equal(limiter.take('a').allowed, true, 'the token given back is taken again');
  limiter.give('a', 10);
  assert.equal(limiter.take('a', 2).allowed, true);
  assert.equal(limiter.take('a').allowed, false, 'a give of 10 filled the bucket to its burst of 2, no more');
});
