/** The plans of a revert: the inverse of what an applied change did, and when none may be made. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_EXPIRY } from '../domain/change.ts';
import { inverseStatus, inverseUpdate, movedFields, revertedKind, revertRefusal } from './revert.ts';

describe('inverseUpdate', () => {
  test('puts back each field the update set, as the recorded before-state had it, and nothing else', () => {
    const before = {
      id: 'ad_1',
      name: 'Spring',
      status: 'active',
      creative: { title: 'Old', body: 'b', file_id: 'file_a' },
    };
    assert.deepEqual(inverseUpdate({ name: 'Summer', status: 'paused' }, before, ['creative']), {
      name: 'Spring',
      status: 'active',
    });
  });

  test('a merged field is put back field by field, and a campaign asset gives back the earlier file', () => {
    const before = { creative: { title: 'Old', body: 'b', file_id: 'file_a' } };
    assert.deepEqual(
      inverseUpdate({ creative: { title: 'New', asset_id: 'a-uuid' } }, before, ['creative']),
      {
        creative: { title: 'Old', file_id: 'file_a' },
      },
    );
  });

  test('a field the object did not have is sent as null, to remove it', () => {
    assert.deepEqual(inverseUpdate({ description: 'Now described' }, { name: 'G' }, []), {
      description: null,
    });
  });
});

describe('inverseStatus', () => {
  test('a pause of an active ad group is reverted by activating it, an activation by pausing', () => {
    assert.equal(inverseStatus({ status: 'active' }), 'activate');
    assert.equal(inverseStatus({ status: 'paused' }), 'pause');
  });
  test('a status nothing can put back is refused, naming it', () => {
    assert.throws(() => inverseStatus({ status: 'archived' }), /was "archived" before the change/);
  });
});

describe('movedFields', () => {
  const left = {
    id: 'ad_1',
    name: 'Summer',
    revision: 4,
    updated_at: 'x',
    creative: { title: 'T', body: 'b' },
  };
  test('an object as the change left it has not moved, whatever its timestamps say', () => {
    assert.deepEqual(movedFields(left, { ...left, updated_at: 'y', serving_issues: [] }), []);
  });
  test('names each field that moved, with its value now and as the change left it', () => {
    assert.deepEqual(
      movedFields(left, { ...left, name: 'Autumn', creative: { title: 'T2', body: 'b' }, revision: 6 }),
      ['name is now "Autumn" (the change left "Summer")', 'creative.title is now "T2" (the change left "T")'],
    );
  });
  test('a revision that moved with no compared field changed is named by the revision', () => {
    assert.deepEqual(movedFields(left, { ...left, revision: 5 }), [
      'its revision is now 5 (the change left 4)',
    ]);
  });
  test('fields named to skip (references written as ref:…) are not compared', () => {
    assert.deepEqual(
      movedFields({ ad_group_id: 'ref:g', name: 'A' }, { ad_group_id: 'adg_9', name: 'A' }, ['ad_group_id']),
      [],
    );
  });
});

describe('revertedKind', () => {
  test('tells updates, status changes, ad group creates and ad batches apart by what was sent', () => {
    assert.deepEqual(revertedKind({ path: '/ads/ad_1', target_path: '/ads/ad_1' }), {
      kind: 'update',
      objectType: 'ad',
    });
    assert.deepEqual(revertedKind({ path: '/ad_groups/adg_1', target_path: '/ad_groups/adg_1' }), {
      kind: 'update',
      objectType: 'ad_group',
    });
    assert.deepEqual(revertedKind({ path: '/ad_groups/adg_1/pause', target_path: '/ad_groups/adg_1' }), {
      kind: 'status',
      objectType: 'ad_group',
    });
    assert.deepEqual(revertedKind({ path: '/ad_groups', target_path: '' }), { kind: 'created-ad-group' });
    assert.deepEqual(revertedKind({ path: '/bulk_mutation_jobs', target_path: '' }), { kind: 'ad-batch' });
  });
  test('an archive is final on the platform and cannot be reverted; other changes are refused by what they sent', () => {
    assert.throws(
      () => revertedKind({ path: '/ads/ad_1/archive', target_path: '/ads/ad_1' }),
      /archived \/ads\/ad_1, and archiving is final/,
    );
    assert.throws(
      () => revertedKind({ path: '/custom_audiences/ca_1/replace', target_path: '/custom_audiences/ca_1' }),
      /POST \/custom_audiences\/ca_1\/replace cannot be reverted: reverts exist for/,
    );
  });
});

describe('revertRefusal', () => {
  const now = new Date('2026-11-28T12:00:00Z');
  const at = (h: number) => new Date(now.getTime() - h * 3_600_000);
  const applied = { change_id: 'c1', status: 'applied' as const };
  test('only an applied change can be reverted', () => {
    assert.match(
      revertRefusal({ change_id: 'c1', status: 'prepared' }, [], DEFAULT_EXPIRY, now) ?? '',
      /change c1 is prepared; only an applied change can be reverted/,
    );
    assert.equal(revertRefusal(applied, [], DEFAULT_EXPIRY, now), undefined);
  });
  test('a revert still pending is named; a rejected, applied or expired one does not stop another', () => {
    const pending = { change_id: 'r1', status: 'prepared' as const, prepared_at: at(1), approved_at: null };
    assert.match(
      revertRefusal(applied, [pending], DEFAULT_EXPIRY, now) ?? '',
      /already has a revert prepared: change r1/,
    );
    const done = [
      { change_id: 'r2', status: 'rejected' as const, prepared_at: at(5), approved_at: null },
      { change_id: 'r3', status: 'prepared' as const, prepared_at: at(100), approved_at: null },
    ];
    assert.equal(revertRefusal(applied, done, DEFAULT_EXPIRY, now), undefined);
  });
});
