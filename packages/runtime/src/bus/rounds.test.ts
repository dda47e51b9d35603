import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rounds } from './rounds.ts';

/** A round that waits until the test lets it finish. */
function gatedRound() {
  let started = 0;
  let release: () => void = () => undefined;
  const round = async () => {
    started++;
    await new Promise<void>((resolve) => {
      release = resolve;
    });
  };
  return { round, started: () => started, release: () => release() };
}

test('wake-ups during a round coalesce into exactly one more round after it', async () => {
  const g = gatedRound();
  const r = rounds(
    g.round,
    () => true,
    (err) => assert.fail(String(err)),
  );
  r.wake();
  r.wake();
  r.wake();
  assert.equal(g.started(), 1, 'no second round beside the first');
  g.release();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(g.started(), 2, 'one more round for the wake-ups it missed');
  g.release();
  await r.settled();
  assert.equal(g.started(), 2);
});

test('no round starts, and no rerun follows, once the work is no longer active', async () => {
  let active = true;
  const g = gatedRound();
  const r = rounds(
    g.round,
    () => active,
    (err) => assert.fail(String(err)),
  );
  r.wake();
  r.wake();
  active = false;
  g.release();
  await r.settled();
  r.wake();
  assert.equal(g.started(), 1);
});

test('a failed round goes to onError and the next wake-up starts afresh', async () => {
  const errors: unknown[] = [];
  let calls = 0;
  const r = rounds(
    async () => {
      calls++;
      if (calls === 1) throw new Error('broker down');
    },
    () => true,
    (err) => errors.push(err),
  );
  r.wake();
  await r.settled();
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /broker down/);
  r.wake();
  await r.settled();
  assert.equal(calls, 2);
  assert.equal(errors.length, 1);
});

test('a wake-up from a callback that runs just as a round finishes is never lost', async () => {
  // The wake-up comes from a promise callback k steps after the round's own: for some k it lands
  // between the end of the loop and the moment the round is no longer under way.
  for (let k = 0; k < 8; k++) {
    let calls = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const r = rounds(
      async () => {
        calls++;
        if (calls === 1) await gate;
      },
      () => true,
      (err) => assert.fail(String(err)),
    );
    r.wake();
    let p: Promise<void> = gate;
    for (let i = 0; i < k; i++) p = p.then(() => undefined);
    void p.then(() => r.wake());
    release();
    await p;
    await new Promise((resolve) => setImmediate(resolve));
    await r.settled();
    assert.equal(calls, 2, `the wake-up ${k} steps after the round's end ran no round`);
  }
});
