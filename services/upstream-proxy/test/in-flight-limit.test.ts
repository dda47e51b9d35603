import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createInFlightLimit } from '../src/upstream/in-flight-limit.ts';
import { CallCancelledError } from '../src/upstream/pause.ts';

/** A call that runs until `end()` is called. */
function heldCall() {
  let end: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  return { end, run: () => ended };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('the bound of calls in flight per account', () => {
  it('runs the calls beyond the bound one by one as earlier ones end, in the order they came, and other accounts at once', async () => {
    const limit = createInFlightLimit(2);
    const first = heldCall();
    const second = heldCall();
    const started: string[] = [];
    const call = (name: string, held: { run: () => Promise<void> }, account = 'a') =>
      limit.run(account, () => {
        started.push(name);
        return held.run();
      });
    const runs = [
      call('first', first),
      call('second', second),
      call('third', heldCall()),
      call('fourth', { run: async () => undefined }),
    ];
    await call('other account', { run: async () => undefined }, 'b');
    await settled();
    assert.deepEqual(started, ['first', 'second', 'other account']);
    second.end();
    await settled();
    assert.deepEqual(started, ['first', 'second', 'other account', 'third']);
    first.end();
    await Promise.all([runs[0], runs[1], runs[3]]);
    assert.deepEqual(started, ['first', 'second', 'other account', 'third', 'fourth']);
  });

  it('lets a waiting call whose caller gave up leave the line, and the next one take its turn', async () => {
    const limit = createInFlightLimit(1);
    const first = heldCall();
    const started: string[] = [];
    const running = limit.run('a', () => {
      started.push('first');
      return first.run();
    });
    const gaveUp = new AbortController();
    const abandoned = limit.run('a', async () => started.push('abandoned'), gaveUp.signal);
    const next = limit.run('a', async () => started.push('next'));
    gaveUp.abort();
    await assert.rejects(abandoned, CallCancelledError);
    first.end();
    await Promise.all([running, next]);
    assert.deepEqual(started, ['first', 'next']);
  });
});
