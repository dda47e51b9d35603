/**
 * An apply that meets its ad account's request budget waits for it within its attempt: the apply
 * worker on the PostgreSQL bus, as the changes service runs it, against the real upstream-proxy
 * (its budget at one request per second) and sandbox.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import { createLogger } from '@adsmcp/runtime/log';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { buildServer, SERVICE_NAME } from '../src/server.ts';
import { APPLY_TOPIC, type ApplyMessage } from '../src/work/apply-message.ts';
import { APPLY_CONSUMER, createApplyGiveUp, createApplyHandler } from '../src/work/apply-worker.ts';
import { statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn } from './people.ts';

let svc: ServiceUnderTest<typeof ChangesService>;
let platform: LivePlatform;

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person();
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });
const logger = createLogger(SERVICE_NAME, 'silent');

before(async () => {
  // One request per second: applies running at once queue for it longer than the proxy lets a
  // call wait (2 s), so some are refused with the seconds to wait.
  platform = await startLivePlatform(workspace, { ratePerSecond: 1, burst: 1 });
  svc = await startServiceUnderTest({
    service: ChangesService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    build: (deps) => buildServer({ ...deps, upstream: platform.upstream }),
  });
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

test('applies refused by the account request budget wait for it and are each applied on their first attempt, never given back to be tried again later', async (t) => {
  const ads = (await platform.ads()).slice(0, 4);
  assert.equal(ads.length, 4);
  const ids: string[] = [];
  for (const [i, ad] of ads.entries()) {
    const { change } = await svc.client.prepareChange(
      {
        accountId: platform.accountId,
        tool: 'ads_update_ad',
        objectType: 'ad',
        effect: 'update',
        operation: {
          method: 'POST',
          path: `/ads/${ad.id}`,
          bodyJson: JSON.stringify({ name: `Budget ${i}` }),
        },
        targetPath: `/ads/${ad.id}`,
      },
      as(agent),
    );
    assert.ok(change);
    await svc.client.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer));
    ids.push(change.changeId);
  }
  await sleep(1100); // the budget's token back

  // Given back to the bus, a refused apply would wait a minute before it is tried again.
  const d = { pool: svc.pool, logger, upstream: platform.upstream, requeueDelayMs: 60_000 };
  const bus = createPgTransport({ pool: svc.pool, logger });
  t.after(() => bus.stop());
  await bus.consume<ApplyMessage>({
    name: APPLY_CONSUMER,
    topic: APPLY_TOPIC,
    handler: createApplyHandler(d),
    giveUp: createApplyGiveUp(d),
    serialByKey: true,
    maxAttempts: 1,
    leaseMs: 5000,
    pollIntervalMs: 100,
    backoff: { baseMs: 60_000, capMs: 60_000 },
    concurrency: 4,
  });
  for (const changeId of ids) {
    const { change } = await svc.client.getChange({ changeId }, as(agent));
    assert.ok(change);
    await svc.client.applyChange({ changeId, digest: change.digest, waitMs: 0 }, as(agent));
  }

  // Eight platform requests (a re-read and a send each) at one per second.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const changes = await Promise.all(
      ids.map(async (changeId) => (await svc.client.getChange({ changeId }, as(agent))).change),
    );
    const states = changes.map((c) => `${statusOf(c)}${c?.error ? ` (${c.error})` : ''}`);
    if (changes.every((c) => statusOf(c) === 'applied')) break;
    assert.ok(Date.now() < deadline, `every change applied within 30 s: ${states.join('; ')}`);
    await sleep(200);
  }
  const names = (await platform.ads()).filter((a) => a.name.startsWith('Budget ')).map((a) => a.name);
  assert.deepEqual(names.sort(), ['Budget 0', 'Budget 1', 'Budget 2', 'Budget 3']);
  for (const ad of ads) assert.equal((await platform.ledger(`/ads/${ad.id}`)).length, 1, 'each sent once');
});
