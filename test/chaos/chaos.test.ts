/**
 * The chaos run's short form, inside `npm test`: 40 approved changes applied while every process
 * of the stack, PostgreSQL included, is killed with SIGKILL about 20 times, one of them a long
 * outage. `npm run chaos` is the long form (300 changes). CHAOS_SEED replays a run whose seed a
 * failure printed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChaosUsageError, chaosOptionsFrom, formatReport, runChaos } from './chaos.ts';

const log = (line: string) => process.stdout.write(`# ${line}\n`);

describe('the chaos run', () => {
  test('applies every approved change exactly once while every process of the stack is killed', {
    timeout: 290_000,
  }, async () => {
    const opts = chaosOptionsFrom(
      [],
      {
        CHAOS_CHANGES: '40',
        CHAOS_KILLS: '20',
        // One outage of the platform, the upstream-proxy or PostgreSQL longer than the apply
        // worker's retries last.
        CHAOS_LONG_OUTAGES: '1',
        CHAOS_LONG_OUTAGE_S: '60-75',
        CHAOS_SETTLE_TIMEOUT_S: '90',
        CHAOS_SEED: process.env.CHAOS_SEED,
      },
      log,
    );
    const report = await runChaos(opts);
    const summary = formatReport(report);
    log(summary);
    for (const target of [
      'gateway',
      'changes',
      'upstream-proxy',
      'marketing',
      'optimizer',
      'ads-sandbox',
      'postgres',
    ])
      assert.ok((report.kills[target] ?? 0) >= 1, `${target} was killed at least once (the report is above)`);
    assert.ok(report.killsDuringApplyRequests >= 5, 'kills landed while applies were requested');
    // The report above lists every broken promise.
    assert.equal(report.violations.length, 0, `${report.violations.length} broken promises`);
    assert.equal(report.ledger.changesWithOneEntry, 40, 'every change is once in the ledger');
  });

  test('a flag or variable out of its rule is refused, naming it and the rule', () => {
    assert.throws(
      () => chaosOptionsFrom(['--changes', '0'], {}, log),
      (err: unknown) =>
        err instanceof ChaosUsageError &&
        err.message === '--changes must be a whole number from 1 to 2000 (got "0")',
    );
    assert.throws(
      () => chaosOptionsFrom([], { CHAOS_KILL_INTERVAL_MS: '3000-500' }, log),
      (err: unknown) =>
        err instanceof ChaosUsageError &&
        err.message.startsWith('CHAOS_KILL_INTERVAL_MS must be a range of milliseconds MIN-MAX'),
    );
    assert.throws(
      () => chaosOptionsFrom(['--seed', '1.5'], {}, log),
      (err: unknown) =>
        err instanceof ChaosUsageError && err.message.startsWith('--seed must be a whole number'),
    );
    const opts = chaosOptionsFrom(
      ['--changes', '100', '--kill-interval', '200-400'],
      { CHAOS_SEED: '7' },
      log,
    );
    assert.deepEqual(
      { changes: opts.changes, kills: opts.kills, interval: opts.killIntervalMs, seed: opts.seed },
      { changes: 100, kills: 50, interval: { min: 200, max: 400 }, seed: 7 },
    );
  });
});
