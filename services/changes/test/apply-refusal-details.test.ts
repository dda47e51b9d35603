/**
 * ApplyChange's refusal of an existing change names its status and change_id in the refusal's
 * details (adsmcp-refusal-details), so the gateway can point the agent to its review page; a
 * digest that is not the change's is refused as that, naming nothing of the change.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { refusalDetailsOf } from '@adsmcp/runtime/platform-read/refusal';
import { as } from '@adsmcp/testkit/service-harness';
import { Code, ConnectError } from '@connectrpc/connect';
import { type ChangesUnderTest, creating, startChangesService } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn } from './people.ts';

let svc: ChangesUnderTest;
let platform: LivePlatform;

const workspace = randomUUID();
const agent = personIn(workspace)();

before(async () => {
  platform = await startLivePlatform(workspace);
  svc = await startChangesService(platform);
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

/** A prepared change creating one paused campaign: nobody approved it. */
async function preparedChange() {
  const body = {
    operations: [
      {
        type: 'create_campaign',
        ref: 'c',
        body: {
          name: `Details ${randomUUID().slice(0, 8)}`,
          objective: 'clicks',
          budget_micros: 5_000_000,
          budget_type: 'daily',
          status: 'paused',
        },
      },
    ],
    validate_only: false,
    partial_failure: false,
  };
  const { change } = await svc.client.prepareChange(
    creating(platform.accountId, 'ads_prepare_ad_batch', 'bulk_mutation_job', '/bulk_mutation_jobs', body),
    as(agent),
  );
  assert.ok(change);
  return change;
}

async function refusedApply(changeId: string, digest: string): Promise<ConnectError> {
  return svc.client.applyChange({ changeId, digest, waitMs: 0 }, as(agent)).then(
    () => assert.fail('an unapproved change was applied'),
    (e: unknown) => ConnectError.from(e),
  );
}

test('applying a change nobody approved is refused naming its status and change_id', async () => {
  const change = await preparedChange();
  for (const digest of ['', change.digest]) {
    const err = await refusedApply(change.changeId, digest);
    assert.equal(Code[err.code], Code[Code.FailedPrecondition]);
    assert.match(err.rawMessage, /not approved yet/);
    assert.deepEqual(refusalDetailsOf(err), { status: 'prepared', change_id: change.changeId });
  }
});

test('a digest that is not the change’s is refused as that, naming nothing of the change', async () => {
  const change = await preparedChange();
  const err = await refusedApply(change.changeId, 'f'.repeat(64));
  assert.equal(Code[err.code], Code[Code.FailedPrecondition]);
  assert.match(err.rawMessage, /the digest given is not this change's/);
  assert.deepEqual(refusalDetailsOf(err), {});
});
