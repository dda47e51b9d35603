import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  type DomainError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  StaleRevisionError,
} from '@adsmcp/runtime/errors';
import { validData } from '@adsmcp/testkit/marketing-items';
import {
  checkArchive,
  type ItemState,
  listQueryOf,
  planSave,
  type SaveRequest,
  type ValidSave,
  validateArchive,
  validateSave,
} from '../src/domain/marketing-item.ts';

function assertFails(fn: () => unknown, type: new (...args: never[]) => DomainError, message: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
    assert.equal(err.message, message);
    return true;
  });
}

const save = (overrides: Partial<SaveRequest> = {}): SaveRequest => ({
  kind: 'brief',
  name: 'Spring brief',
  tags: [],
  data: validData('brief'),
  ...overrides,
});

describe('validateSave', () => {
  test('accepts a new item and stores no collection as the empty one', () => {
    const valid = validateSave(save({ tags: ['spring', 'plants'] }));
    assert.deepEqual(valid, {
      kind: 'brief',
      name: 'Spring brief',
      collection: '',
      tags: ['spring', 'plants'],
      data: validData('brief'),
    });
  });

  test('refuses a malformed item_id, an expected_revision without its item_id, and a save without data', () => {
    const cases: [Partial<SaveRequest>, string][] = [
      [{ itemId: 'item-1' }, 'item_id must be a UUID (got "item-1")'],
      [
        { expectedRevision: 2 },
        'expected_revision applies only to updating an existing item; send its item_id too',
      ],
      [{ data: undefined }, 'data is required'],
    ];
    for (const [overrides, message] of cases) {
      assertFails(() => validateSave(save(overrides)), InvalidArgumentError, message);
    }
  });
});

describe('planSave', () => {
  const itemId = randomUUID();
  const update = (expectedRevision?: number): ValidSave =>
    validateSave(save({ itemId, ...(expectedRevision === undefined ? {} : { expectedRevision }) }));
  const stored = (o: Partial<ItemState> = {}): ItemState => ({
    itemId,
    kind: 'brief',
    revision: 3,
    archivedAt: null,
    ...o,
  });

  test('creates when no item_id is given', () => {
    assert.equal(planSave(validateSave(save()), undefined), 'create');
  });

  test('creates with a new item_id when no expected_revision is given', () => {
    assert.equal(planSave(update(), undefined), 'create');
  });

  test('an expected_revision for an item that does not exist is not found', () => {
    assertFails(
      () => planSave(update(1), undefined),
      NotFoundError,
      `marketing item ${itemId} does not exist; to create it, send no expected_revision`,
    );
  });

  test('updates an existing item at its current revision', () => {
    assert.equal(planSave(update(3), stored()), 'update');
  });

  test('an update without expected_revision is refused, naming the current revision', () => {
    assertFails(
      () => planSave(update(), stored()),
      InvalidArgumentError,
      `expected_revision is required when updating: marketing item ${itemId} exists, at revision 3`,
    );
  });

  test('a stale revision is refused with the current revision', () => {
    assertFails(
      () => planSave(update(2), stored()),
      StaleRevisionError,
      'expected_revision is stale: the marketing item is at revision 3; read it again and retry with expected_revision 3',
    );
  });

  test('an archived item cannot be updated', () => {
    assertFails(
      () => planSave(update(3), stored({ archivedAt: new Date() })),
      FailedPreconditionError,
      `marketing item ${itemId} is archived and cannot be updated; save a new item instead`,
    );
  });

  test('the kind of an item cannot change', () => {
    assertFails(
      () => planSave(update(3), stored({ kind: 'brand' })),
      InvalidArgumentError,
      'kind cannot change from brand to brief; save a new item for a brief',
    );
  });
});

describe('archive', () => {
  const itemId = randomUUID();
  const live: ItemState = { itemId, kind: 'brand', revision: 2, archivedAt: null };

  test('needs a UUID item_id', () => {
    assertFails(
      () => validateArchive({ itemId: 'x', expectedRevision: 2 }),
      InvalidArgumentError,
      'item_id must be a UUID (got "x")',
    );
  });

  test('archives a live item at its current revision', () => {
    assert.doesNotThrow(() => checkArchive({ itemId, expectedRevision: 2 }, live));
  });

  test('refuses a stale revision, an archived item and a missing one', () => {
    assertFails(
      () => checkArchive({ itemId, expectedRevision: 1 }, live),
      StaleRevisionError,
      'expected_revision is stale: the marketing item is at revision 2; read it again and retry with expected_revision 2',
    );
    assertFails(
      () => checkArchive({ itemId, expectedRevision: 3 }, { ...live, revision: 3, archivedAt: new Date() }),
      FailedPreconditionError,
      `marketing item ${itemId} is already archived (at revision 3)`,
    );
    assertFails(
      () => checkArchive({ itemId, expectedRevision: 1 }, undefined),
      NotFoundError,
      `marketing item ${itemId} does not exist`,
    );
  });
});

describe('listQueryOf', () => {
  test('defaults to the first 20 items', () => {
    assert.deepEqual(listQueryOf({}), { offset: 0, limit: 20 });
  });

  test('keeps the filters given; an empty query filters nothing', () => {
    assert.deepEqual(
      listQueryOf({ kind: 'batch', query: '', collection: '', tag: 'spring', offset: 5, limit: 100 }),
      {
        kind: 'batch',
        collection: '',
        tag: 'spring',
        offset: 5,
        limit: 100,
      },
    );
  });
});
