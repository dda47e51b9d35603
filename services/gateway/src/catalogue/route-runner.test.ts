/**
 * An rpc route's `poll`, run by the route runner against the real marketing service (in-process,
 * real Connect and PostgreSQL, its import worker on the PostgreSQL bus): the tool answers once the
 * work is final, or with the work as it stands when the bounded time ran out, and sends each
 * status as a progress notification.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ImportService } from '@adsmcp/proto/marketing/v1/imports_pb';
import type { BusTransport } from '@adsmcp/runtime/bus/bus';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import { createLogger } from '@adsmcp/runtime/log';
import { type ServiceUnderTest, startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../../../marketing/src/server.ts';
import {
  createImportGiveUp,
  createImportHandler,
  IMPORT_TOPIC,
  type ImportMessage,
} from '../../../marketing/src/work/import-worker.ts';
import type { GatewayDeps } from '../deps.ts';
import { ToolFailure } from '../mcp/tool-failure.ts';
import {
  buildCatalogue,
  type Caller,
  type ProgressUpdate,
  type RpcRoute,
  type ToolRow,
} from './catalogue.ts';
import { GATEWAY_ROUTE_SHAPES, runRoute } from './route-runner.ts';
import { importPerformance } from './tools/import-tools.ts';

const META = {
  source: 'other',
  currency: 'EUR',
  timezone: 'Europe/Berlin',
  attribution: '7-day click',
  since: '2026-10-01',
  until: '2026-10-31',
};

let svc: ServiceUnderTest<typeof ImportService>;
let worker: BusTransport | undefined;

async function startWorker(): Promise<void> {
  const logger = createLogger('gateway-test', 'silent');
  worker = createPgTransport({ pool: svc.pool, logger });
  await worker.consume<ImportMessage>({
    name: 'marketing-performance-import',
    topic: IMPORT_TOPIC,
    handler: createImportHandler({ pool: svc.pool, logger }),
    giveUp: createImportGiveUp({ pool: svc.pool, logger }),
    maxAttempts: 3,
    backoff: { baseMs: 100, capMs: 1000 },
  });
}

before(async () => {
  svc = await startServiceUnderTest({
    service: ImportService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    prepare: (pool) => migrateBus(pool, SERVICE_NAME),
    build: buildServer,
  });
});

after(async () => {
  await worker?.stop();
  await svc?.stop();
});

/** Runs `row` as the gateway would, for a caller of one fresh workspace, collecting its progress. */
async function call(row: ToolRow<GatewayDeps>, args: Record<string, unknown>) {
  const catalogue = buildCatalogue([row], GATEWAY_ROUTE_SHAPES, runRoute);
  const tool = catalogue.byName.get(row.name);
  assert.ok(tool);
  // The route reaches services only through clientOf; nothing else of the gateway is used.
  const deps = { clientOf: svc.clientOf } as unknown as GatewayDeps;
  const caller = { principal: testPrincipal() } as Caller;
  const seen: ProgressUpdate[] = [];
  const progress = async (update: ProgressUpdate) => {
    seen.push(update);
  };
  try {
    return { result: await catalogue.run(tool, { caller, deps, progress }, args), seen };
  } catch (err) {
    return { error: err, seen };
  }
}

/** The import tool with a shorter bounded wait, for the work that never finishes here. */
function waitingAtMost(withinMs: number): ToolRow<GatewayDeps> {
  const route = importPerformance.route as RpcRoute<GatewayDeps>;
  assert.ok(route.poll);
  return { ...importPerformance, route: { ...route, poll: { ...route.poll, withinMs } } };
}

describe('a route that polls', () => {
  describe('while no worker runs', () => {
    test('answers the work as it stands once the bounded time ran out, with one notification', async () => {
      const started = Date.now();
      const { result, seen } = await call(waitingAtMost(400), {
        ...META,
        name: 'Never picked up',
        csv: 'ad_id,impressions,clicks,spend\nad_1,1,1,1\n',
      });
      assert.ok(Date.now() - started >= 400, 'it waited the bounded time');
      const imp = (result as { import: { status: string } } | undefined)?.import;
      assert.equal(imp?.status, 'queued');
      assert.deepEqual(seen, [{ progress: 1, total: 3, message: 'import queued' }]);
    });
  });

  describe('with the import worker', () => {
    beforeEach(async () => {
      if (worker === undefined) await startWorker();
    });

    test('answers once the work is final, each status a notification, in order', async () => {
      const csv = [
        'ad_id,impressions,clicks,spend',
        ...Array.from({ length: 50 }, (_, i) => `ad_${i},1,1,0.5`),
      ];
      const { result, seen } = await call(importPerformance, { ...META, name: 'Done', csv: csv.join('\n') });
      const imp = (result as { import: { status: string; rows_saved: number } } | undefined)?.import;
      assert.equal(imp?.status, 'completed');
      assert.equal(imp?.rows_saved, 50);
      assert.equal(seen[0]?.message, 'import queued');
      assert.deepEqual(seen.at(-1), { progress: 3, total: 3, message: 'import completed: 50 rows saved' });
      for (let i = 1; i < seen.length; i++)
        assert.ok((seen[i]?.progress ?? 0) > (seen[i - 1]?.progress ?? 0));
    });

    test('a failed import is the final answer, which the row makes its import_failed error', async () => {
      const { error, seen } = await call(importPerformance, {
        ...META,
        name: 'Bad',
        csv: 'ad_id,impressions,clicks,spend\nad_1,1,1,x\n',
      });
      assert.ok(error instanceof ToolFailure, String(error));
      assert.equal(error.code, 'import_failed');
      assert.match(error.message, /row 1 column spend \(line 2\)/);
      assert.equal((error.extra as { import: { status: string } }).import.status, 'failed');
      assert.match(seen.at(-1)?.message ?? '', /^import failed: 1 problems, nothing saved$/);
    });
  });

  test('a poll naming a field its messages lack stops the catalogue from being built, naming the tool', () => {
    const route = importPerformance.route as RpcRoute<GatewayDeps>;
    assert.ok(route.poll);
    const broken = { ...importPerformance, route: { ...route, poll: { ...route.poll, status: 'state' } } };
    assert.throws(
      () => buildCatalogue([broken], GATEWAY_ROUTE_SHAPES, runRoute),
      /tool ads_import_performance: its poll names state, which marketing.v1.PerformanceImport lacks/,
    );
  });
});
