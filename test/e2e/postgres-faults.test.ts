/**
 * What the services do when PostgreSQL fails under them, with PostgreSQL in a container
 * (Testcontainers; see docs/testing.md) so that it can be killed and restarted, or frozen:
 * - restarted under load, a service loses no write it acknowledged and serves again by itself;
 * - paused while a change applies, the change is applied exactly once after it returns.
 * The services run in-process on the container's databases; the load is bounded in count and time.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ChangeStatus, ChangeStatusSchema, ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { MarketingService } from '@adsmcp/proto/marketing/v1/marketing_pb';
import { createPgTransport, migrateBus } from '@adsmcp/runtime/bus/index';
import { enumWord } from '@adsmcp/runtime/enum-words';
import { createLogger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  GATEWAY_ISSUER,
  generatePrincipalKeys,
  type Principal,
} from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { validData } from '@adsmcp/testkit/marketing-items';
import { type PgContainer, startPgContainer } from '@adsmcp/testkit/pg-container';
import { as, startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import type { JsonObject } from '@bufbuild/protobuf';
import {
  buildServer as buildChanges,
  SERVICE_NAME as CHANGES,
  OPTIMIZER_ISSUER,
} from '../../services/changes/src/server.ts';
import { APPLY_TOPIC, type ApplyMessage } from '../../services/changes/src/work/apply-message.ts';
import { createApplyHandler } from '../../services/changes/src/work/apply-worker.ts';
import { startLivePlatform } from '../../services/changes/test/live-platform.ts';
import {
  buildServer as buildMarketing,
  SERVICE_NAME as MARKETING,
  MIGRATIONS_DIR as MARKETING_MIGRATIONS,
} from '../../services/marketing/src/server.ts';

let pg: PgContainer;

before(async () => {
  pg = await startPgContainer();
  // Every database the harnesses create (testkit/postgres) is made on the container's server.
  process.env.DATABASE_URL = pg.adminUrl;
});

after(async () => {
  await pg?.stop();
});

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

describe('PostgreSQL killed and restarted while the marketing service saves items', () => {
  test('every save the service acknowledged is there afterwards, and saves succeed again without a manual step', async (t) => {
    const svc = await startServiceUnderTest({
      service: MarketingService,
      name: MARKETING,
      migrations: MARKETING_MIGRATIONS,
      build: buildMarketing,
    });
    t.after(() => svc.stop());
    const who = testPrincipal();
    const acknowledged: string[] = [];
    let refused = 0;
    let seq = 0;
    let stopLoad = false;
    /** One writer: saves until told to stop, bounded by count and time. */
    const writer = async () => {
      const deadline = Date.now() + 120_000;
      for (let i = 0; i < 2000 && !stopLoad && Date.now() < deadline; i++) {
        try {
          const { item } = await svc.client.saveMarketingItem(
            { kind: 'brief', name: `Brief ${seq++}`, data: validData('brief') as JsonObject },
            { ...svc.as(who), timeoutMs: 10_000 },
          );
          assert.ok(item);
          acknowledged.push(item.itemId);
        } catch {
          refused++;
          await sleep(50);
        }
      }
    };
    const writers = [writer(), writer(), writer(), writer()];
    try {
      await until('saves before the restart', async () => acknowledged.length >= 40, 60_000);
      const before = acknowledged.length;
      await pg.restart();
      const afterRestart = acknowledged.length;
      await until('saves after the restart', async () => acknowledged.length >= afterRestart + 40, 60_000);
      assert.ok(before >= 40);
    } finally {
      stopLoad = true;
      await Promise.all(writers);
    }
    t.diagnostic(`${acknowledged.length} saves acknowledged, ${refused} refused while PostgreSQL was down`);
    const missing: string[] = [];
    for (const itemId of acknowledged) {
      const { item } = await svc.client
        .getMarketingItem({ itemId }, svc.as(who))
        .catch(() => ({ item: undefined }));
      if (item?.itemId !== itemId) missing.push(itemId);
    }
    assert.deepEqual(missing, [], 'acknowledged saves that are gone after the restart');
    const { rows } = await svc.pool.query<{ n: string }>('SELECT count(*) AS n FROM marketing_items');
    // A save whose answer was lost with its connection may be stored too: more, never fewer.
    assert.ok(
      Number(rows[0]?.n) >= acknowledged.length,
      `${rows[0]?.n} stored, ${acknowledged.length} acknowledged`,
    );
  });
});

describe('PostgreSQL paused while the changes service applies a change', () => {
  test('after it returns, the change is applied, and the platform ledger shows exactly one mutation', async (t) => {
    const workspace = randomUUID();
    const approver = randomUUID();
    // Stopped last started first: the worker, the service, then the platform.
    const stops: (() => Promise<void>)[] = [];
    t.after(async () => {
      for (const stop of stops.reverse()) await stop();
    });
    const platform = await startLivePlatform(workspace);
    stops.push(() => platform.stop());
    const [ad] = await platform.ads();
    assert.ok(ad);
    const gatewayKeys = await generatePrincipalKeys();
    const optimizerKeys = await generatePrincipalKeys();
    const verifier = await createPrincipalVerifier(
      { [GATEWAY_ISSUER]: gatewayKeys.publicKeyPem, [OPTIMIZER_ISSUER]: optimizerKeys.publicKeyPem },
      CHANGES,
    );
    const svc = await startServiceUnderTest({
      service: ChangesService,
      name: CHANGES,
      migrations: fileURLToPath(new URL('../../services/changes/migrations', import.meta.url)),
      prepare: (p) => migrateBus(p, CHANGES),
      build: (deps) => buildChanges({ ...deps, verifier, upstream: platform.upstream }),
    });
    stops.push(() => svc.stop());
    // The apply worker as the service's main wires it, with a short lease: the pause outlasts it,
    // so another of its four handlers may take the message over once PostgreSQL is back.
    // Its upstream client freezes PostgreSQL right after the platform has applied the change
    // and before the worker has recorded it.
    let unpaused: Promise<void> | undefined;
    const upstream: typeof platform.upstream = {
      ...platform.upstream,
      call: async (...args: Parameters<typeof platform.upstream.call>) => {
        const res = await platform.upstream.call(...args);
        if (args[0].method === 'POST' && unpaused === undefined) {
          await pg.pause();
          unpaused = sleep(6000).then(() => pg.unpause());
        }
        return res;
      },
    };
    const logger = createLogger(CHANGES, 'silent');
    const bus = createPgTransport({ pool: svc.pool, logger });
    const apply = createApplyHandler({ pool: svc.pool, upstream, logger });
    let runs = 0;
    stops.push(async () => {
      await unpaused;
      await bus.stop();
    });
    await bus.consume<ApplyMessage>({
      name: 'changes-apply',
      topic: APPLY_TOPIC,
      handler: (m, ctx) => {
        runs++;
        return apply(m, ctx);
      },
      maxAttempts: 5,
      leaseMs: 2000,
      pollIntervalMs: 250,
      backoff: { baseMs: 500, capMs: 5000 },
      concurrency: 4,
    });
    const optimizer = createServiceClient(
      ChangesService,
      svc.url,
      CHANGES,
      await createPrincipalSigner(optimizerKeys.privateKeyPem, OPTIMIZER_ISSUER),
    );
    const gateway = createServiceClient(
      ChangesService,
      svc.url,
      CHANGES,
      await createPrincipalSigner(gatewayKeys.privateKeyPem),
    );
    const worker: Principal = {
      workspaceId: workspace,
      credentialId: 'optimizer-proposal:p1',
      userId: approver,
      role: 'editor',
      scopes: ['read', 'write'],
      via: 'worker',
    };
    const changeId = randomUUID();
    const path = `/ads/${ad.id}`;
    const { change } = await optimizer.recordApprovedChange(
      {
        change: {
          accountId: platform.accountId,
          tool: 'ads_update_ad',
          objectType: 'ad',
          effect: 'update',
          operation: {
            method: 'POST',
            path,
            bodyJson: JSON.stringify({ creative: { title: 'Applied once, paused or not' } }),
          },
          targetPath: path,
        },
        changeId,
        approvedBy: `user:${approver} via dashboard (optimization proposal p1)`,
        approverUserId: approver,
      },
      as(worker),
    );
    assert.equal(change?.state, ChangeStatus.APPLYING);
    const reader = as({ ...worker, via: 'mcp' });
    let status = '';
    await until(
      'the change to be applied',
      async () => {
        const read = (await gateway.getChange({ changeId }, reader)).change;
        status = enumWord(ChangeStatusSchema, read?.state ?? ChangeStatus.UNSPECIFIED) ?? '';
        return status === 'applied' || status === 'failed';
      },
      120_000,
    );
    assert.ok(unpaused, 'PostgreSQL was paused after the platform applied the change');
    await unpaused;
    t.diagnostic(`the apply handler ran ${runs} time(s) for the one message`);
    assert.equal(status, 'applied');
    const mutations = (await platform.ledger(path)).filter((e) => e.method === 'POST');
    assert.equal(mutations.length, 1, `the ledger shows ${mutations.length} mutations of ${path}`);
    assert.equal(mutations[0]?.idempotency_key, `change-${changeId}`);
  });
});
