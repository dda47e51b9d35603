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
import {
  checkArchive,
  type ItemState,
  nextOffset,
  planSave,
  type SaveRequest,
  type ValidSave,
  validateArchive,
  validateList,
  validateSave,
} from '../src/domain/marketing-item.ts';
import { validData } from './fixtures.ts';

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

  test('names every field that breaks a rule', () => {
    const cases: [Partial<SaveRequest>, string][] = [
      [{ name: '' }, 'name must be 1 to 200 characters (got 0)'],
      [{ name: 'n'.repeat(201) }, 'name must be 1 to 200 characters (got 201)'],
      [
        { kind: 'memo' },
        'kind must be one of brand, brief, playbook, inspiration, batch, creative (got "memo")',
      ],
      [{ collection: 'c'.repeat(201) }, 'collection must be at most 200 characters (got 201)'],
      [{ tags: Array.from({ length: 31 }, (_, i) => `t${i}`) }, 'tags must have at most 30 items (got 31)'],
      [{ tags: ['ok', ''] }, 'tags[1] must be 1 to 100 characters (got 0)'],
      [{ tags: ['t'.repeat(101)] }, 'tags[0] must be 1 to 100 characters (got 101)'],
      [{ tags: ['spring', 'sale', 'spring'] }, 'tags[2] repeats tags[0]; items must be unique'],
      [{ itemId: 'item-1' }, 'item_id must be a UUID (got "item-1")'],
      [
        { itemId: randomUUID(), expectedRevision: 0 },
        'expected_revision must be an integer of at least 1 (got 0)',
      ],
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

  test('reports field and data problems together', () => {
    assertFails(
      () => validateSave(save({ name: '', data: { ...validData('brief'), offer: 1 } })),
      InvalidArgumentError,
      'name must be 1 to 200 characters (got 0); data.offer must be a string (got number)',
    );
  });

  test('checks the data against the shape of the kind', () => {
    assertFails(
      () => validateSave(save({ kind: 'batch', data: { variants: [] } })),
      InvalidArgumentError,
      'data.variants must have 1 to 100 items (got 0)',
    );
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

  test('needs a UUID item_id and a revision of at least 1', () => {
    assertFails(
      () => validateArchive({ itemId: 'x', expectedRevision: 0 }),
      InvalidArgumentError,
      'item_id must be a UUID (got "x"); expected_revision must be an integer of at least 1 (got 0)',
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

describe('validateList', () => {
  test('defaults to the first 20 items', () => {
    assert.deepEqual(validateList({}), { offset: 0, limit: 20 });
  });

  test('keeps the filters given; an empty query filters nothing', () => {
    assert.deepEqual(
      validateList({ kind: 'batch', query: '', collection: '', tag: 'spring', offset: 5, limit: 100 }),
      {
        kind: 'batch',
        collection: '',
        tag: 'spring',
        offset: 5,
        limit: 100,
      },
    );
  });

  test('refuses values out of bounds, naming each', () => {
    const cases: [Parameters<typeof validateList>[0], string][] = [
      [{ limit: 0 }, 'limit must be an integer from 1 to 100 (got 0)'],
      [{ limit: 101 }, 'limit must be an integer from 1 to 100 (got 101)'],
      [{ offset: -1 }, 'offset must be an integer from 0 to 100000 (got -1)'],
      [{ offset: 100_001 }, 'offset must be an integer from 0 to 100000 (got 100001)'],
      [
        { kind: 'memo' },
        'kind must be one of brand, brief, playbook, inspiration, batch, creative (got "memo")',
      ],
      [{ query: 'q'.repeat(201) }, 'query must be at most 200 characters (got 201)'],
      [{ collection: 'c'.repeat(201) }, 'collection must be at most 200 characters (got 201)'],
      [{ tag: 't'.repeat(101) }, 'tag must be at most 100 characters (got 101)'],
    ];
    for (const [req, message] of cases) assertFails(() => validateList(req), InvalidArgumentError, message);
  });
});

test('nextOffset points after the page, and nowhere at the end or past the largest offset', () => {
  assert.equal(nextOffset(0, 20, 45), 20);
  assert.equal(nextOffset(40, 5, 45), undefined);
  assert.equal(nextOffset(50, 0, 45), undefined);
  assert.equal(nextOffset(99_990, 20, 200_000), undefined);
  assert.equal(nextOffset(99_980, 20, 200_000), 100_000);
});
