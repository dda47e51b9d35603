import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChangeResolution, ChangeSchema, ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { create } from '@bufbuild/protobuf';
import { changeView } from './change-view.ts';

const URL = 'http://127.0.0.1:8080';
const base = {
  changeId: '6f1c2a8e-1111-4222-8333-944445555666',
  accountId: 'acc-1',
  tool: 'ads_update_ad',
  summary: 'Rename the ad',
  operation: { method: 'POST', path: '/ads/ad_1', bodyJson: '{"name":"B"}' },
  digest: 'abc123',
  preparedBy: 'credential:x',
  preparedAt: '2026-01-01T00:00:00.000Z',
};

test('a change shows its status and resolution by their words, and each field it does not have as null', () => {
  const view = changeView(create(ChangeSchema, { ...base, state: ChangeStatus.PREPARED }), URL);
  assert.equal(view.status, 'prepared');
  for (const field of [
    'approved_by',
    'approved_at',
    'reject_reason',
    'apply_retried_at',
    'resolution',
    'resolution_note',
    'applied_at',
    'upstream_status',
    'upstream_response',
    'error',
    'expires_at',
    'reverts_change_id',
  ])
    assert.equal(view[field], null, field);

  const settled = changeView(
    create(ChangeSchema, {
      ...base,
      state: ChangeStatus.FAILED,
      resolvedAs: ChangeResolution.NOT_APPLIED,
      resolvedAt: '2026-01-02T00:00:00.000Z',
      resolutionNote: 'not on the platform',
      upstreamStatus: 502,
      upstreamResponseJson: '{"error":"bad gateway"}',
      error: 'not applied',
    }),
    URL,
  );
  assert.equal(settled.status, 'failed');
  assert.equal(settled.resolution, 'not_applied');
  assert.equal(settled.resolved_at, '2026-01-02T00:00:00.000Z');
  assert.equal(settled.resolution_note, 'not on the platform');
  assert.equal(settled.upstream_status, 502);
  assert.deepEqual(settled.upstream_response, { error: 'bad gateway' });
  assert.equal(settled.error, 'not applied');
});

test('a change the service sent without a status is refused, not shown with an invented one', () => {
  assert.throws(
    () => changeView(create(ChangeSchema, base), URL),
    /the changes service returned change 6f1c2a8e-1111-4222-8333-944445555666 without a status/,
  );
});
