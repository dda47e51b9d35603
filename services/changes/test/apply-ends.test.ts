/**
 * Every approved change reaches an end: the apply worker on the PostgreSQL bus, as the changes
 * service runs it, against the real upstream-proxy and sandbox, through outages of our own
 * processes, an approval running out, and apply messages that were lost.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import type { Pool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import { createPrincipalSigner, generatePrincipalKeys } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { freePort } from '@adsmcp/testkit/free-port';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import type { Client } from '@connectrpc/connect';
import { buildServer, ISSUER, SERVICE_NAME } from '../src/server.ts';
import { APPLY_TOPIC, type ApplyMessage } from '../src/work/apply-message.ts';
import { sweepLostApplies } from '../src/work/apply-sweeper.ts';
import {
  APPLY_CONSUMER,
  type ApplyWorkerDeps,
  createApplyGiveUp,
  createApplyHandler,
} from '../src/work/apply-worker.ts';
import { creating, statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn } from './people.ts';

let svc: ServiceUnderTest<typeof ChangesService>;
let pool: Pool;
let client: Client<typeof ChangesService>;
let platform: LivePlatform;
let ads: { id: string; revision: number }[];
/** An upstream-proxy address nothing listens on: calls to it are refused, as while it restarts. */
let downUpstream: Client<typeof UpstreamService>;

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person();
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });
const logger = createLogger(SERVICE_NAME, 'silent');

before(async () => {
  platform = await startLivePlatform(workspace);
  ads = (await platform.ads()).slice();
  svc = await startServiceUnderTest({
    service: ChangesService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    build: (deps) => buildServer({ ...deps, upstream: platform.upstream }),
  });
  pool = svc.pool;
  client = svc.client;
  const signer = await createPrincipalSigner((await generatePrincipalKeys()).privateKeyPem, ISSUER);
  downUpstream = createServiceClient(
    UpstreamService,
    `http://127.0.0.1:${await freePort()}`,
    'upstream-proxy',
    signer,
  );
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * An upstream-proxy that is down while `down` says so: its calls go to an address nobody listens
 * on (refused, as while the process restarts), and to the real one otherwise.
 */
function switchableUpstream(down: () => boolean): Client<typeof UpstreamService> {
  return {
    ...platform.upstream,
    call: (req, options) => (down() ? downUpstream.call(req, options) : platform.upstream.call(req, options)),
  } as Client<typeof UpstreamService>;
}

/** Runs the apply consumer on the bus as the service does, for the length of test `t`. */
async function runApplyConsumer(
  t: TestContext,
  deps: Omit<ApplyWorkerDeps, 'pool' | 'logger'>,
  maxAttempts: number,
): Promise<ApplyWorkerDeps> {
  const d: ApplyWorkerDeps = { pool, logger, requeueDelayMs: 200, ...deps };
  const bus = createPgTransport({ pool, logger });
  t.after(() => bus.stop());
  await bus.consume<ApplyMessage>({
    name: APPLY_CONSUMER,
    topic: APPLY_TOPIC,
    handler: createApplyHandler(d),
    giveUp: createApplyGiveUp(d),
    maxAttempts,
    leaseMs: 2000,
    pollIntervalMs: 100,
    backoff: { baseMs: 50, capMs: 200 },
  });
  return d;
}

async function approvedAndApplying(ad: { id: string; revision: number }, name: string): Promise<string> {
  const { change } = await client.prepareChange(
    {
      accountId: platform.accountId,
      tool: 'ads_update_ad',
      objectType: 'ad',
      effect: 'update',
      operation: { method: 'POST', path: `/ads/${ad.id}`, bodyJson: JSON.stringify({ name }) },
      targetPath: `/ads/${ad.id}`,
    },
    as(agent),
  );
  assert.ok(change);
  await client.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer));
  const applying = await client.applyChange(
    { changeId: change.changeId, digest: change.digest, waitMs: 0 },
    as(agent),
  );
  assert.equal(statusOf(applying.change), 'applying');
  return change.changeId;
}

async function changeOf(changeId: string) {
  const { change } = await client.getChange({ changeId }, as(agent));
  assert.ok(change);
  return change;
}

async function waitForStatus(changeId: string, status: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const change = await changeOf(changeId);
    if (statusOf(change) === status) return change;
    if (Date.now() > deadline)
      assert.fail(`change ${changeId} is ${statusOf(change)} (${change.error}), not ${status}`);
    await sleep(50);
  }
}

describe('an outage is not a refusal', () => {
  test('an approved change meeting an upstream-proxy outage longer than its attempts waits, naming the upstream-proxy, and is applied once when it is back', async (t) => {
    const ad = ads.shift() as { id: string; revision: number };
    let down = true;
    await runApplyConsumer(t, { upstream: switchableUpstream(() => down) }, 3);
    const changeId = await approvedAndApplying(ad, 'Through the outage');
    // Several rounds of three attempts, each given up and tried again: the approval is not spent.
    const deadline = Date.now() + 20_000;
    let waiting = await changeOf(changeId);
    while (!/tried again in/.test(waiting.error ?? '') && Date.now() < deadline) {
      await sleep(50);
      waiting = await changeOf(changeId);
    }
    assert.equal(statusOf(waiting), 'applying');
    assert.match(waiting.error ?? '', /the upstream-proxy could not be reached/);
    assert.match(waiting.error ?? '', /nothing was sent to the ad account, and it is tried again in/);
    assert.doesNotMatch(waiting.error ?? '', /ad platform could not be reached/);
    down = false;
    const applied = await waitForStatus(changeId, 'applied');
    assert.equal(applied.error, undefined);
    const ledger = await platform.ledger(`/ads/${ad.id}`);
    assert.deepEqual(
      ledger.map((e) => e.idempotency_key),
      [`change-${changeId}`],
    );
  });

  test('a change whose approval runs out during the outage fails, saying nothing was sent and the approval expired', async (t) => {
    const ad = ads.shift() as { id: string; revision: number };
    await runApplyConsumer(t, { upstream: switchableUpstream(() => true) }, 1000);
    const changeId = await approvedAndApplying(ad, 'Never sent');
    // Approved a day ago: the workspace's approval expiry (24 hours by default) has just run out.
    await pool.query(`UPDATE changes SET approved_at = now() - interval '24 hours' WHERE change_id = $1`, [
      changeId,
    ]);
    const failed = await waitForStatus(changeId, 'failed');
    assert.match(failed.error ?? '', /before its time ran out: the upstream-proxy could not be reached/);
    assert.match(
      failed.error ?? '',
      /nothing was sent to the ad account, and its approval \(valid 24 hours\) has expired/,
    );
    assert.deepEqual(await platform.ledger(`/ads/${ad.id}`), []);
  });
});

describe('a refusal of the upstream-proxy', () => {
  test('a first send the upstream-proxy refuses before it reaches the platform fails as never sent, not with its outcome unknown', async (t) => {
    const ad = ads.shift() as { id: string; revision: number };
    t.after(() => platform.setCanWrite(true));
    // Approved and asked to apply, then the connection made read-only (an operator's edit)
    // before the apply consumer takes it.
    const changeId = await approvedAndApplying(ad, 'Refused by the proxy');
    await platform.setCanWrite(false);
    await runApplyConsumer(t, { upstream: platform.upstream }, 3);
    const failed = await waitForStatus(changeId, 'failed');
    assert.match(
      failed.error ?? '',
      /^the upstream-proxy refused to send it to the ad platform: the connection to ad account .* is read-only: .*; nothing was sent$/,
    );
    assert.equal(failed.outcomeUnknown, false, 'its outcome is known: it was not applied');
    const { rows } = await pool.query<{ sent_at: Date | null }>(
      'SELECT sent_at FROM changes WHERE change_id = $1',
      [changeId],
    );
    assert.equal(rows[0]?.sent_at, null, 'recorded as never sent');
    assert.deepEqual(await platform.ledger(`/ads/${ad.id}`), []);
    // Nothing to send again: an apply of a change that failed, never sent, is refused.
    await assert.rejects(client.applyChange({ changeId, digest: '', waitMs: 0 }, as(agent)), /failed/);
  });
});

describe('the account read before a first send', () => {
  test('an account no longer connected when its standards are checked ends the change at once, never sent', async (t) => {
    // An active standard: the apply reads the account (its time zone) before sending. A change
    // that creates an object has nothing to re-read first, so that read is the first call.
    const { standard } = await svc.clientOf(StandardsService).saveAccountStandard(
      {
        accountId: platform.accountId,
        name: 'Guidance',
        kind: 'standard',
        data: { guidance: 'Be brief.' },
      },
      as(agent),
    );
    assert.ok(standard);
    t.after(async () => {
      await platform.setConnected(true);
      await pool.query('DELETE FROM account_standards WHERE standard_id = $1', [standard.standardId]);
    });
    const body = {
      campaign_id: 'cmp_any',
      name: 'Account taken away',
      status: 'paused',
      bidding_config: { billing_event_type: 'impression', strategy: 'fixed_bid', max_bid_micros: 1_000 },
    };
    const { change } = await client.prepareChange(
      creating(platform.accountId, 'ads_create_ad_group', 'ad_group', '/ad_groups', body),
      as(agent),
    );
    assert.ok(change);
    await client.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer));
    await client.applyChange({ changeId: change.changeId, digest: change.digest, waitMs: 0 }, as(agent));
    await platform.setConnected(false);
    // Three attempts: taken as an outage, the read would spend them all, then the give-up path.
    await runApplyConsumer(t, { upstream: platform.upstream }, 3);
    const failed = await waitForStatus(change.changeId, 'failed');
    assert.match(failed.error ?? '', /^no ad account .* in this workspace/);
    assert.equal(failed.outcomeUnknown, false, 'its outcome is known: it was not applied');
    const { rows } = await pool.query<{ sent_at: Date | null }>(
      'SELECT sent_at FROM changes WHERE change_id = $1',
      [change.changeId],
    );
    assert.equal(rows[0]?.sent_at, null, 'recorded as never sent');
    assert.deepEqual(await platform.ledger('/ad_groups'), []);
  });
});

describe('the give-up path', () => {
  test('a change sent by a last attempt that never reported back ends failed with its outcome unknown, and applied again it lands once', async (t) => {
    const ad = ads.shift() as { id: string; revision: number };
    // The first consumer sends the change, then hangs as if killed before it recorded the answer.
    const hang = deferred();
    const sent = deferred();
    t.after(() => hang.resolve());
    const hanging = {
      ...platform.upstream,
      call: async (req: Parameters<Client<typeof UpstreamService>['call']>[0], options: object) => {
        const res = await platform.upstream.call(req, options);
        if (req.method === 'POST') {
          sent.resolve();
          await hang.promise;
        }
        return res;
      },
    } as Client<typeof UpstreamService>;
    const d: ApplyWorkerDeps = { pool, logger, upstream: hanging };
    const first = createPgTransport({ pool, logger });
    t.after(() => first.stop());
    const consumer = {
      name: APPLY_CONSUMER,
      topic: APPLY_TOPIC,
      maxAttempts: 1,
      leaseMs: 300,
      pollIntervalMs: 50,
      stopTimeoutMs: 20,
    };
    await first.consume<ApplyMessage>({
      ...consumer,
      handler: createApplyHandler(d),
      giveUp: createApplyGiveUp(d),
    });
    const changeId = await approvedAndApplying(ad, 'Sent, then killed');
    await sent.promise;
    await first.stop();

    const second = createPgTransport({ pool, logger });
    t.after(() => second.stop());
    const d2: ApplyWorkerDeps = { ...d, upstream: platform.upstream };
    await second.consume<ApplyMessage>({
      ...consumer,
      handler: createApplyHandler(d2),
      giveUp: createApplyGiveUp(d2),
    });
    const failed = await waitForStatus(changeId, 'failed');
    assert.match(failed.error ?? '', /its apply stopped before it finished after 1 attempts/);
    assert.match(failed.error ?? '', /may or may not have been applied: apply it again/);
    assert.equal((await platform.ledger(`/ads/${ad.id}`)).length, 1, 'the platform had applied it');
    // The hung handler lets go of the ad (a killed process's connection closes with it); what it
    // then records is refused, as the change has already ended.
    hang.resolve();

    const again = await client.applyChange({ changeId, digest: '', waitMs: 0 }, as(agent));
    assert.equal(statusOf(again.change), 'applying');
    await waitForStatus(changeId, 'applied');
    assert.deepEqual(
      (await platform.ledger(`/ads/${ad.id}`)).map((e) => e.idempotency_key),
      [`change-${changeId}`],
      'replayed with its key, not applied twice',
    );
  });
});

describe('the sweep for lost apply messages', () => {
  /** A change applying whose apply message is gone, as if a broker had lost it. */
  async function lost(ad: { id: string; revision: number }, name: string): Promise<string> {
    const changeId = await approvedAndApplying(ad, name);
    await pool.query(
      `UPDATE bus_outbox SET status = 'dead', locked_until = NULL WHERE payload->>'change_id' = $1`,
      [changeId],
    );
    return changeId;
  }

  test('a change never sent is queued again and applied; one that was sent ends with its outcome unknown', async (t) => {
    const unsentAd = ads.shift() as { id: string; revision: number };
    const sentAd = ads.shift() as { id: string; revision: number };
    const unsent = await lost(unsentAd, 'Swept and applied');
    const sent = await lost(sentAd, 'Swept after sending');
    await pool.query('UPDATE changes SET sent_at = now() WHERE change_id = $1', [sent]);
    const d: ApplyWorkerDeps = {
      pool,
      logger,
      upstream: platform.upstream,
      requeueDelayMs: 0,
    };
    // Not yet quiet for long enough: nothing is touched.
    assert.equal(await sweepLostApplies(d, 3_600_000), 0);
    assert.equal(statusOf(await changeOf(unsent)), 'applying');

    assert.equal(await sweepLostApplies(d, 0), 2);
    assert.equal(await sweepLostApplies(d, 0), 0, 'a change swept once now has a message on its way');
    const failed = await changeOf(sent);
    assert.equal(statusOf(failed), 'failed');
    assert.match(
      failed.error ?? '',
      /its apply message was lost .*may or may not have been applied: apply it again/,
    );

    await runApplyConsumer(t, { upstream: platform.upstream }, 3);
    await waitForStatus(unsent, 'applied');
    assert.equal((await platform.ledger(`/ads/${unsentAd.id}`)).length, 1);
  });
});
