import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FailedPreconditionError, InvalidArgumentError } from '@adsmcp/runtime/errors';
import { needsTarget, planChange } from './plan.ts';

const liveAudience = {
  id: 'ca_1',
  name: 'VIP customers',
  status: 'active',
  revision: 3,
  matched_count: null,
};

const plan = (effect: string, body: Record<string, unknown>, live?: Record<string, unknown>) =>
  planChange({ objectType: 'custom_audience', effect, body, live, accountName: 'Shop' });

function refuses(fn: () => unknown, kind: typeof InvalidArgumentError, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof kind, String(err));
    assert.match((err as Error).message, message);
    return true;
  });
}

const replaceBody = (expected_revision: number) => ({
  file_id: 'file_1',
  expected_revision,
  filename: 'members.csv',
  identifier_type: 'email',
});

test('a replace at the current revision is summarised by the file that replaces the members', () => {
  assert.equal(
    plan('replace', replaceBody(3), liveAudience).summary,
    'Replace the members of custom audience "VIP customers" (ca_1) on Shop with those of file file_1 (members.csv, email identifiers); revision 3',
  );
  assert.equal(needsTarget('replace'), true);
});

test('a replace against a stale revision is refused, naming the current revision', () => {
  refuses(
    () => plan('replace', replaceBody(2), liveAudience),
    FailedPreconditionError,
    /^`body.expected_revision` 2 is stale: custom audience "VIP customers" \(ca_1\) is at revision 3; prepare the replace again with expected_revision 3/,
  );
});

test('an archived audience cannot have its members replaced, and archiving it again would change nothing', () => {
  const archived = { ...liveAudience, status: 'archived' };
  refuses(() => plan('replace', replaceBody(3), archived), FailedPreconditionError, /is archived/);
  refuses(
    () => plan('archive', {}, archived),
    FailedPreconditionError,
    /^nothing would change: custom audience "VIP customers" \(ca_1\) is already archived$/,
  );
  assert.equal(
    plan('archive', {}, liveAudience).summary,
    'Archive custom audience "VIP customers" (ca_1) on Shop (status "active" → "archived")',
  );
});

test('a merge makes a new audience with no target and needs at least one source', () => {
  assert.equal(needsTarget('merge'), false);
  assert.equal(
    plan('merge', { name: 'Buyers', custom_audience_ids: ['ca_1', 'ca_2'] }).summary,
    'Merge into a new custom audience "Buyers" on Shop: custom_audience_ids ["ca_1","ca_2"]',
  );
  refuses(
    () => plan('merge', { name: 'Buyers', custom_audience_ids: [] }),
    InvalidArgumentError,
    /`body.custom_audience_ids` must name at least one audience/,
  );
});

test('an audience supports replace, merge and archive only', () => {
  refuses(() => plan('update', { name: 'X' }, liveAudience), InvalidArgumentError, /replace, merge, archive/);
});
