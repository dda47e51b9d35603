import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChangeStatus, ListChangesRequestSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { argumentsOf, requestFrom } from '../rpc-mapping.ts';
import { validate } from '../schema.ts';
import { listChanges } from './change-tools.ts';

// The changes service trusts these bounds of a list: they are checked here, at the edge.

test('a change list refuses an unknown status and a page out of bounds, naming each', () => {
  const messages = (args: unknown) => validate(listChanges.input, args).map((i) => i.message);
  assert.deepEqual(messages({ status: 'done' }), [
    '`status` must be one of prepared, approved, expired, rejected, applying, applied, failed (got "done")',
  ]);
  assert.deepEqual(messages({ limit: 0 }), ['`limit` must be an integer from 1 to 100 (got 0)']);
  assert.deepEqual(messages({ limit: 101 }), ['`limit` must be an integer from 1 to 100 (got 101)']);
  assert.deepEqual(messages({ offset: -1 }), ['`offset` must be an integer from 0 to 100000 (got -1)']);
  assert.deepEqual(messages({ offset: 100_001 }), [
    '`offset` must be an integer from 0 to 100000 (got 100001)',
  ]);
  assert.deepEqual(messages({ status: 'failed', limit: 100, offset: 100_000 }), []);
});

test('a change list’s status argument reaches the changes service as the ChangeStatus it names', () => {
  const request = requestFrom(ListChangesRequestSchema, { status: 'expired', limit: 20 });
  assert.equal(request.state, ChangeStatus.EXPIRED);
  assert.deepEqual(argumentsOf(ListChangesRequestSchema, request), { status: 'expired', limit: 20 });
  // No status: every status (CHANGE_STATUS_UNSPECIFIED), not a filter on one.
  assert.equal(requestFrom(ListChangesRequestSchema, {}).state, ChangeStatus.UNSPECIFIED);
});
