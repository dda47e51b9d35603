/** The supervisor's wait before restarting a crashed process: short, doubling, bounded, reset. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_RESTART_POLICY, formatDelay, restartDelay } from '../src/restart-backoff.ts';

test('a crash loop waits 0.5 s, then twice as long each time, never more than 30 s', () => {
  const waits: number[] = [];
  let last: number | undefined;
  for (let i = 0; i < 10; i++) {
    last = restartDelay(DEFAULT_RESTART_POLICY, last, 1_000);
    waits.push(last);
  }
  assert.deepEqual(waits, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000, 30_000]);
  assert.deepEqual(waits.map(formatDelay).slice(0, 7), ['0.5 s', '1 s', '2 s', '4 s', '8 s', '16 s', '30 s']);
});

test('a process that ran a minute before crashing is restarted after 0.5 s again', () => {
  assert.equal(restartDelay(DEFAULT_RESTART_POLICY, 30_000, 59_999), 30_000);
  assert.equal(restartDelay(DEFAULT_RESTART_POLICY, 30_000, 60_000), 500);
});
