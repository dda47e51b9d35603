/**
 * The performance-import worker on its own (its handler called as the bus calls it, on a real
 * database): a repeated or concurrent delivery saves the rows once; a problem the parser meets
 * after rows were already sent to PostgreSQL is still named and leaves nothing saved; the totals
 * and the ad count are those of the saved rows.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ImportService, type PerformanceImport } from '@adsmcp/proto/marketing/v1/imports_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { inTransaction } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import { type ServiceUnderTest, startServiceUnderTest, testPrincipal } from '@adsmcp/testkit/service-harness';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { insertImport } from '../src/store/import-store.ts';
import { createImportHandler, IMPORT_TOPIC } from '../src/work/import-worker.ts';

let svc: ServiceUnderTest<typeof ImportService>;

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
  await svc?.stop();
});

const META = {
  source: 'other',
  name: 'October',
  currency: 'EUR',
  timezone: 'Europe/Berlin',
  attribution: '7-day click',
  since: '2026-10-01',
  until: '2026-10-31',
} as const;

/** Records a queued CSV import, as the RPC does, and returns how to deliver its message. */
async function queued(
  who: Principal,
  csv: string,
): Promise<{ importId: string; deliver: () => Promise<void> }> {
  const importId = randomUUID();
  await insertImport(svc.pool, {
    workspaceId: who.workspaceId,
    importId,
    meta: META,
    format: 'csv',
    contentHash: createHash('sha256').update(importId).digest('hex'),
    inputRows: null,
    inputCsv: csv,
    columnMapping: {},
    rowCount: 0,
    createdBy: 'test',
  });
  const handler = createImportHandler({ pool: svc.pool, logger: createLogger('marketing-test', 'silent') });
  const deliver = () =>
    handler(
      {
        id: randomUUID(),
        topic: IMPORT_TOPIC,
        key: importId,
        payload: { workspace_id: who.workspaceId, import_id: importId },
        headers: {},
        attempt: 1,
        enqueuedAt: new Date(),
      },
      { inTx: (fn) => inTransaction(svc.pool, fn), signal: new AbortController().signal },
    );
  return { importId, deliver };
}

async function read(who: Principal, importId: string): Promise<PerformanceImport> {
  const { import: imp } = await svc.client.getPerformanceImport({ importId }, svc.as(who));
  assert.ok(imp);
  return imp;
}

async function savedRows(
  importId: string,
): Promise<{ row_number: number; ad_id: string; impressions: string }[]> {
  const { rows } = await svc.pool.query(
    `SELECT row_number, ad_id, impressions::text FROM performance_import_rows
      WHERE import_id = $1 ORDER BY row_number`,
    [importId],
  );
  return rows;
}

const HEADER = 'ad_id,impressions,clicks,spend';
const goodRows = (n: number) => Array.from({ length: n }, (_, i) => `ad_${i},${i + 1},1,0.25`);

describe('the import worker', () => {
  test('two deliveries at once and one after completion save the rows once and change nothing', async () => {
    const who = testPrincipal();
    const { importId, deliver } = await queued(who, [HEADER, ...goodRows(1200)].join('\n'));
    await Promise.all([deliver(), deliver()]);
    const first = await read(who, importId);
    assert.deepEqual(
      [first.status, first.rowCount, first.rowsSaved, first.adCount],
      ['completed', 1200, 1200, 1200],
    );
    await deliver();
    const again = await read(who, importId);
    assert.deepEqual(
      [again.status, again.rowsSaved, again.finishedAt],
      ['completed', 1200, first.finishedAt],
    );
    const rows = await savedRows(importId);
    assert.equal(rows.length, 1200);
    assert.deepEqual(
      rows.map((r) => r.row_number),
      Array.from({ length: 1200 }, (_, i) => i + 1),
    );
  });

  test('a short row near the end of a long CSV fails the import with its row and line; nothing is saved', async () => {
    const who = testPrincipal();
    const lines = goodRows(3000);
    lines[2998] = 'ad_x,1,1';
    const { importId, deliver } = await queued(who, [HEADER, ...lines].join('\n'));
    await deliver();
    const imp = await read(who, importId);
    assert.equal(imp.status, 'failed');
    assert.deepEqual(
      imp.errors.map((e) => [e.row, e.line, e.message]),
      [[2999, 3000, 'the CSV cannot be read: the row has 3 cells where the header has 4']],
    );
    assert.deepEqual(await savedRows(importId), []);
  });

  test('the totals and the ad count come from the saved rows; whole numbers with leading zeros are read as numbers', async () => {
    const who = testPrincipal();
    const csv = [HEADER, 'ad_1,007,1,0.10', 'ad_1,0,,0.20', 'ad_2,0000,3,', 'ad_3,10,2,1.005'].join('\n');
    const { importId, deliver } = await queued(who, csv);
    await deliver();
    const imp = await read(who, importId);
    assert.deepEqual([imp.status, imp.rowsSaved, imp.adCount], ['completed', 4, 3]);
    assert.deepEqual(
      (await savedRows(importId)).map((r) => r.impressions),
      ['7', '0', '0', '10'],
    );
    const t = imp.totals;
    assert.deepEqual(
      [
        [t?.impressions?.sum, t?.impressions?.knownRows],
        [t?.clicks?.sum, t?.clicks?.knownRows],
        [t?.spend?.sum, t?.spend?.knownRows],
        [t?.revenue?.sum, t?.revenue?.knownRows],
      ],
      [
        ['17', 4],
        ['6', 3],
        ['1.305', 3],
        [undefined, 0],
      ],
    );
  });
});
