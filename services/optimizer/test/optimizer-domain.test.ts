import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { InvalidArgumentError, StaleRevisionError } from '@adsmcp/runtime/errors';
import {
  type CheckedSave,
  newOptimizer,
  pausedOptimizer,
  type SaveInput,
  statusOf,
  type UncheckedConfig,
  updatedOptimizer,
  validateSave,
} from '../src/domain/optimizer.ts';

const validConfig = (): UncheckedConfig => ({
  campaignIds: ['c-1', 'c-2'],
  goal: 'cpa',
  cadenceHours: 24,
  windowHours: 168,
  reportingDelayHours: 48,
  minImpressions: 1000,
  minClicks: 50,
  minConversions: 5,
  maxAdsPerCampaign: 3,
  reviewHours: 24,
  publishHours: 4,
  allowedDomains: ['example.com', 'shop.example.com'],
});

/** Asserts that `fn` throws an InvalidArgumentError whose message matches `message`. */
function refuses(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidArgumentError, String(err));
    assert.match(err.message, message);
    return true;
  });
}

const ACCOUNT = randomUUID();
const saveInput = (patch: Partial<SaveInput> = {}): SaveInput => ({
  accountId: ACCOUNT,
  name: 'Weekly copy review',
  config: validConfig(),
  enabled: true,
  ...patch,
});

describe('save rules', () => {
  test('a create names no optimizer and no revision', () => {
    const save = validateSave(saveInput());
    assert.equal(save.update, undefined);
  });

  test('a create with an expected_revision is refused, since it is most likely an update missing its optimizer_id', () => {
    refuses(() => validateSave(saveInput({ expectedRevision: 1 })), /expected_revision is only for updates/);
  });

  test('an update needs expected_revision', () => {
    refuses(
      () => validateSave(saveInput({ optimizerId: randomUUID() })),
      /expected_revision is required when updating/,
    );
  });

  test('account_id and optimizer_id must be UUIDs', () => {
    refuses(() => validateSave(saveInput({ accountId: 'acct-1' })), /account_id must be a UUID/);
    refuses(
      () => validateSave(saveInput({ optimizerId: 'opt-1', expectedRevision: 1 })),
      /optimizer_id must be a UUID/,
    );
  });

  test('a save without a configuration is refused', () => {
    refuses(() => validateSave(saveInput({ config: undefined })), /config is required/);
  });
});

const T0 = new Date('2026-03-01T10:00:00.000Z');
const hoursAfter = (t: Date, h: number) => new Date(t.getTime() + h * 3_600_000);
const ids = { optimizerId: randomUUID(), workspaceId: randomUUID() };
const created = (patch: Partial<SaveInput> = {}) => newOptimizer(validateSave(saveInput(patch)), ids, T0);
const updateOf = (revision: number, patch: Partial<SaveInput> = {}): CheckedSave =>
  validateSave(saveInput({ optimizerId: ids.optimizerId, expectedRevision: revision, ...patch }));

describe('optimizer lifecycle', () => {
  test('a new enabled optimizer is active at revision 1 with its first review one cadence away', () => {
    const o = created();
    assert.equal(o.revision, 1);
    assert.equal(statusOf(o), 'active');
    assert.equal(o.pausedAt, null);
    assert.deepEqual(o.nextReviewAt, hoursAfter(T0, 24));
    assert.deepEqual(o.createdAt, T0);
  });

  test('a new disabled optimizer is paused and has no review due', () => {
    const o = created({ enabled: false });
    assert.equal(statusOf(o), 'paused');
    assert.deepEqual(o.pausedAt, T0);
    assert.equal(o.nextReviewAt, null);
  });

  test('an update at the current revision moves to the next revision and reschedules the review', () => {
    const t1 = hoursAfter(T0, 1);
    const next = updatedOptimizer(
      created(),
      updateOf(1, { name: 'Renamed', config: { ...validConfig(), cadenceHours: 48 } }),
      t1,
    );
    assert.equal(next.revision, 2);
    assert.equal(next.name, 'Renamed');
    assert.equal(next.config.cadenceHours, 48);
    assert.deepEqual(next.nextReviewAt, hoursAfter(t1, 48));
    assert.deepEqual(next.updatedAt, t1);
    assert.deepEqual(next.createdAt, T0);
  });

  test('a stale revision is refused with the current revision', () => {
    const current = { ...created(), revision: 3 };
    assert.throws(
      () => updatedOptimizer(current, updateOf(2), T0),
      (err: unknown) => {
        assert.ok(err instanceof StaleRevisionError);
        assert.equal(err.currentRevision, 3);
        assert.match(err.message, /optimizer is at revision 3/);
        return true;
      },
    );
  });

  test('an update may not move the optimizer to another account', () => {
    refuses(
      () => updatedOptimizer(created(), updateOf(1, { accountId: randomUUID() }), T0),
      /account_id cannot change/,
    );
  });

  test('saving a paused optimizer enabled resumes it; saving it disabled keeps when it was paused', () => {
    const paused = pausedOptimizer(created(), T0);
    assert.ok(paused);
    const t1 = hoursAfter(T0, 2);
    const stillPaused = updatedOptimizer(paused, updateOf(2, { enabled: false }), t1);
    assert.deepEqual(stillPaused.pausedAt, T0);
    assert.equal(stillPaused.nextReviewAt, null);
    const resumed = updatedOptimizer(stillPaused, updateOf(3, { enabled: true }), t1);
    assert.equal(statusOf(resumed), 'active');
    assert.equal(resumed.pausedAt, null);
    assert.deepEqual(resumed.nextReviewAt, hoursAfter(t1, 24));
  });

  test('pausing stops the schedule and moves to the next revision', () => {
    const t1 = hoursAfter(T0, 5);
    const paused = pausedOptimizer(created(), t1);
    assert.ok(paused);
    assert.equal(statusOf(paused), 'paused');
    assert.equal(paused.enabled, false);
    assert.deepEqual(paused.pausedAt, t1);
    assert.equal(paused.nextReviewAt, null);
    assert.equal(paused.revision, 2);
  });

  test('pausing a paused optimizer changes nothing', () => {
    assert.equal(pausedOptimizer(created({ enabled: false }), hoursAfter(T0, 1)), undefined);
  });
});
