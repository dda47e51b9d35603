/**
 * Performance imports through the marketing service: the RPC records the import as queued and
 * puts it on the bus; the worker (a real Postgres-bus consumer here) parses, checks and saves it.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  type ImportPerformanceRequestSchema,
  ImportService,
  type PerformanceImport,
} from '@adsmcp/proto/marketing/v1/imports_pb';
import type { BusTransport } from '@adsmcp/runtime/bus/bus';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import { inTransaction } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import {
  assertRefused,
  type ServiceUnderTest,
  startServiceUnderTest,
  testPrincipal,
} from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { insertImport, markRunning } from '../src/store/import-store.ts';
import {
  createImportGiveUp,
  createImportHandler,
  IMPORT_TOPIC,
  type ImportMessage,
} from '../src/work/import-worker.ts';

let svc: ServiceUnderTest<typeof ImportService>;
let bus: BusTransport;

before(async () => {
  svc = await startServiceUnderTest({
    service: ImportService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    prepare: (pool) => migrateBus(pool, SERVICE_NAME),
    build: buildServer,
  });
  const logger = createLogger('marketing-test', 'silent');
  bus = createPgTransport({ pool: svc.pool, logger });
  await bus.consume<ImportMessage>({
    name: 'marketing-performance-import',
    topic: IMPORT_TOPIC,
    handler: createImportHandler({ pool: svc.pool, logger }),
    giveUp: createImportGiveUp({ pool: svc.pool, logger }),
    maxAttempts: 3,
    backoff: { baseMs: 100, capMs: 1000 },
  });
});

after(async () => {
  await bus?.stop();
  await svc?.stop();
});

type ImportRequest = MessageInitShape<typeof ImportPerformanceRequestSchema>;

const META = {
  source: 'vendor_a_ads',
  name: 'October',
  currency: 'EUR',
  timezone: 'Europe/Berlin',
  attribution: '7-day click',
  since: '2026-10-01',
  until: '2026-10-31',
};

async function importAndWait(
  who: Principal,
  req: ImportRequest,
): Promise<{ imp: PerformanceImport; created: boolean }> {
  const res = await svc.client.importPerformance(req, svc.as(who));
  assert.ok(res.import);
  let imp = res.import;
  const deadline = Date.now() + 15_000;
  while ((imp.status === 'queued' || imp.status === 'running') && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    const got = await svc.client.getPerformanceImport({ importId: imp.importId }, svc.as(who));
    assert.ok(got.import);
    imp = got.import;
  }
  return { imp, created: res.created };
}

async function savedRows(importId: string) {
  const { rows } = await svc.pool.query(
    `SELECT ad_id, impressions::text, clicks::text, spend::text, conversions::text, revenue::text
       FROM performance_import_rows WHERE import_id = $1 ORDER BY row_number`,
    [importId],
  );
  return rows;
}

describe('importing rows', () => {
  test('rows are saved with exact decimal money, unknown metrics stay null, and totals sum exactly', async () => {
    const who = testPrincipal();
    const { imp, created } = await importAndWait(who, {
      ...META,
      rows: [
        { adId: 'ad_1', impressions: 1000, clicks: 10, spend: 0.1, revenue: 19.99 },
        { adId: 'ad_2', impressions: 500, spend: 0.2, conversions: 1.5 },
        { adId: 'ad_1', impressions: 9007199254740991, clicks: 3 },
      ],
    });
    assert.equal(created, true);
    assert.equal(imp.status, 'completed', JSON.stringify(imp.errors));
    assert.equal(imp.format, 'rows');
    assert.equal(imp.rowCount, 3);
    assert.equal(imp.rowsSaved, 3);
    assert.equal(imp.adCount, 2);
    assert.deepEqual(await savedRows(imp.importId), [
      { ad_id: 'ad_1', impressions: '1000', clicks: '10', spend: '0.1', conversions: null, revenue: '19.99' },
      { ad_id: 'ad_2', impressions: '500', clicks: null, spend: '0.2', conversions: '1.5', revenue: null },
      {
        ad_id: 'ad_1',
        impressions: '9007199254740991',
        clicks: '3',
        spend: null,
        conversions: null,
        revenue: null,
      },
    ]);
    const t = imp.totals;
    assert.ok(t);
    // 0.1 + 0.2 is exactly 0.3 in decimal, not 0.30000000000000004.
    assert.deepEqual([t.spend?.sum, t.spend?.knownRows], ['0.3', 2]);
    assert.deepEqual([t.impressions?.sum, t.impressions?.knownRows], ['9007199254742491', 3]);
    assert.deepEqual([t.clicks?.sum, t.clicks?.knownRows], ['13', 2]);
    assert.deepEqual([t.conversions?.sum, t.conversions?.knownRows], ['1.5', 1]);
    // The input is not kept twice once the rows are saved.
    const { rows } = await svc.pool.query(
      'SELECT input_rows, input_csv FROM performance_imports WHERE import_id = $1',
      [imp.importId],
    );
    assert.deepEqual(rows[0], { input_rows: null, input_csv: null });
  });

  test('text with tabs, line breaks and backslashes is saved exactly as given', async () => {
    const body = 'Line one\nline two\twith a tab, a \\N and a \\. and \r\n';
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      rows: [{ adId: 'ad\\1', body, hook: '\\N', impressions: 1, clicks: 1, spend: 1 }],
    });
    assert.equal(imp.status, 'completed', JSON.stringify(imp.errors));
    const { rows } = await svc.pool.query(
      'SELECT ad_id, body, hook FROM performance_import_rows WHERE import_id = $1',
      [imp.importId],
    );
    assert.deepEqual(rows, [{ ad_id: 'ad\\1', body, hook: '\\N' }]);
  });

  test('a metric no row reported has no sum: unknown, not 0', async () => {
    const { imp } = await importAndWait(testPrincipal(), { ...META, rows: [{ adId: 'ad_9', clicks: 4 }] });
    assert.equal(imp.status, 'completed');
    assert.equal(imp.totals?.spend?.sum, undefined);
    assert.equal(imp.totals?.spend?.knownRows, 0);
  });

  test('the same content again answers the first import; other metadata or another workspace is a new one', async () => {
    const who = testPrincipal();
    const req = { ...META, rows: [{ adId: 'ad_1', impressions: 1, clicks: 1, spend: 1 }] };
    const first = await importAndWait(who, req);
    const again = await svc.client.importPerformance(req, svc.as(who));
    assert.equal(again.created, false);
    assert.equal(again.import?.importId, first.imp.importId);
    const renamed = await svc.client.importPerformance({ ...req, name: 'Other name' }, svc.as(who));
    assert.equal(renamed.created, true);
    assert.notEqual(renamed.import?.importId, first.imp.importId);
    const elsewhere = await svc.client.importPerformance(req, svc.as(testPrincipal()));
    assert.equal(elsewhere.created, true);
    const { rows } = await svc.pool.query(
      'SELECT count(*)::int AS n FROM performance_imports WHERE workspace_id = $1',
      [who.workspaceId],
    );
    assert.equal(rows[0].n, 2);
  });

  test('a negative spend or a fractional count fails the import naming row and column, and saves nothing', async () => {
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      rows: [
        { adId: 'ad_1', impressions: 1, clicks: 1, spend: 1 },
        { adId: 'ad_2', impressions: 1.5, clicks: 1, spend: -2 },
      ],
    });
    assert.equal(imp.status, 'failed');
    assert.equal(imp.rowsSaved, 0);
    assert.equal(imp.errorCount, 2);
    assert.deepEqual(
      imp.errors.map((e) => [e.row, e.column]),
      [
        [2, 'impressions'],
        [2, 'spend'],
      ],
    );
    assert.deepEqual(await savedRows(imp.importId), []);
  });
});

describe('importing CSV', () => {
  const CSV = [
    'Ad,Impr,clicks,Cost,conversions,revenue,Notes',
    'ad_1,1200,30,"1,5",,,ignored',
    'ad_2,800,,12.50,2,100.10,',
  ].join('\r\n');

  test('column_mapping maps headers; an empty cell is unknown; other columns are ignored', async () => {
    const csv = CSV.replace('"1,5"', '10.05');
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      csv,
      columnMapping: { ad_id: 'Ad', impressions: 'Impr', spend: 'Cost' },
    });
    assert.equal(imp.status, 'completed', JSON.stringify(imp.errors));
    assert.equal(imp.format, 'csv');
    assert.equal(imp.rowCount, 2);
    assert.deepEqual(await savedRows(imp.importId), [
      { ad_id: 'ad_1', impressions: '1200', clicks: '30', spend: '10.05', conversions: null, revenue: null },
      {
        ad_id: 'ad_2',
        impressions: '800',
        clicks: null,
        spend: '12.50',
        conversions: '2',
        revenue: '100.10',
      },
    ]);
    assert.equal(imp.totals?.spend?.sum, '22.55');
  });

  test('a bad cell fails the whole import naming the row, the column and the line; nothing is saved', async () => {
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      csv: CSV,
      columnMapping: { ad_id: 'Ad', impressions: 'Impr', spend: 'Cost' },
    });
    assert.equal(imp.status, 'failed');
    assert.equal(imp.errorCount, 1);
    const [e] = imp.errors;
    assert.deepEqual([e?.row, e?.column, e?.line], [1, 'spend', 2]);
    assert.match(e?.message ?? '', /decimal number/);
    assert.deepEqual(await savedRows(imp.importId), []);
  });

  test('a bad row after rows already sent to PostgreSQL still leaves nothing saved', async () => {
    const lines = Array.from({ length: 1200 }, (_, i) => `ad_${i},${i},1,${i === 1099 ? 'free' : '0.5'}`);
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      csv: ['ad_id,impressions,clicks,spend', ...lines].join('\n'),
    });
    assert.equal(imp.status, 'failed');
    assert.equal(imp.rowCount, 1200);
    assert.deepEqual(
      imp.errors.map((e) => [e.row, e.column, e.line]),
      [[1100, 'spend', 1101]],
    );
    assert.deepEqual(await savedRows(imp.importId), []);
  });

  test('a required column the CSV lacks, or a mapped header it lacks, is named', async () => {
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      csv: 'ad_id,impressions\nad_1,1\n',
      columnMapping: { clicks: 'Clicks' },
    });
    assert.equal(imp.status, 'failed');
    const messages = imp.errors.map((e) => e.message).join(' | ');
    assert.match(messages, /column_mapping\.clicks names the header "Clicks"/);
    assert.match(messages, /no "spend" column/);
  });

  test('a row with the wrong number of cells is refused with its row and line', async () => {
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      csv: 'ad_id,impressions,clicks,spend\nad_1,1,1,1\nad_2,1,1,1\nad_3,1,1\n',
    });
    assert.equal(imp.status, 'failed');
    assert.deepEqual(
      imp.errors.map((e) => [e.row, e.line, e.message]),
      [[3, 4, 'the CSV cannot be read: the row has 3 cells where the header has 4']],
    );
  });

  test('every row’s problem is reported in row order, rows the parser cannot read included', async () => {
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      csv: [
        'ad_id,impressions,clicks,spend,body',
        'ad_1,x,1,1,',
        'ad_2,1,1,1,"two\r\nlines"',
        'ad_3,1,1',
        'ad_4,1,1,1,,',
        'ad_5,1,1,free,',
        // Two stray quotes in one row: one row the parser cannot read, reported once.
        'ad_6,1"x,1,=HYPERLINK("y"),',
        'ad_7,1,1,1,',
        'ad_8,"1"x,1,1,',
        'ad_9,y,1,1,',
      ].join('\r\n'),
    });
    assert.equal(imp.status, 'failed');
    assert.deepEqual(
      imp.errors.map((e) => [e.row, e.column ?? '', e.line]),
      [
        [1, 'impressions', 2],
        [3, '', 5],
        [4, '', 6],
        [5, 'spend', 7],
        [6, 'impressions', 8],
        // A quote that closes a cell too early: the parser cannot say where the next row begins.
        [8, '', 10],
      ],
    );
    assert.match(
      imp.errors[4]?.message ?? '',
      /a quote \("\) inside the unquoted cell in column 2; put the whole cell in quotes/,
    );
    assert.match(imp.errors[5]?.message ?? '', /the CSV after it was not read/);
    assert.equal(imp.errorCount, 6);
  });

  test('a decimal metric longer than 60 characters is refused by its length, not called a non-number', async () => {
    const { imp } = await importAndWait(testPrincipal(), {
      ...META,
      csv: `ad_id,impressions,clicks,spend\nad_1,1,1,${'1'.repeat(60)}\nad_2,1,1,${'1'.repeat(61)}\n`,
    });
    assert.equal(imp.status, 'failed');
    assert.deepEqual(
      imp.errors.map((e) => [e.row, e.column, e.message]),
      [[2, 'spend', 'must be a decimal number of at most 60 characters (got 61)']],
    );
  });

  test('a CSV with CRLF, LF, lone CR or mixed line endings reads the same rows; a quoted line break stays in its cell', async () => {
    const who = testPrincipal();
    const body = 'first line\r\nsecond line';
    const lines = [
      'ad_id,impressions,clicks,spend,revenue,body',
      'ad_1,10,1,12.50,-5,',
      `ad_2,,,,,"${body}"`,
    ];
    const mixed = `${lines[0]}\r\n${lines[1]}\n${lines[2]}\r\n`;
    const { imp } = await importAndWait(who, { ...META, csv: mixed });
    assert.equal(imp.status, 'completed', JSON.stringify(imp.errors));
    assert.equal(imp.rowCount, 2);
    const { rows } = await svc.pool.query(
      `SELECT ad_id, revenue::text, body FROM performance_import_rows WHERE import_id = $1 ORDER BY row_number`,
      [imp.importId],
    );
    assert.deepEqual(rows, [
      { ad_id: 'ad_1', revenue: '-5', body: '' },
      { ad_id: 'ad_2', revenue: null, body },
    ]);
    for (const eol of ['\n', '\r\n', '\r']) {
      const same = await svc.client.importPerformance({ ...META, csv: lines.join(eol) + eol }, svc.as(who));
      assert.equal(same.created, false, `line endings ${JSON.stringify(eol)} are the same content`);
      assert.equal(same.import?.importId, imp.importId);
    }
    const otherCell = lines.join('\n').replace('\r\n', '\n');
    const different = await importAndWait(who, { ...META, csv: otherCell });
    assert.equal(different.created, true, 'a line break inside a cell is content');
  });

  test('a CSV that starts with a byte-order mark is read without it, as the same content', async () => {
    const who = testPrincipal();
    const csv = 'ad_id,impressions,clicks,spend\nad_1,1,1,1\n';
    const { imp } = await importAndWait(who, { ...META, csv: `\uFEFF${csv}` });
    assert.equal(imp.status, 'completed', JSON.stringify(imp.errors));
    assert.deepEqual(
      (await savedRows(imp.importId)).map((r) => r.ad_id),
      ['ad_1'],
    );
    const plain = await svc.client.importPerformance({ ...META, csv }, svc.as(who));
    assert.equal(plain.import?.importId, imp.importId);
  });

  test('a leading byte-order mark is not counted in the 1500000 characters of a CSV', async () => {
    const header = 'ad_id,impressions,clicks,spend\n';
    const full = header + 'x'.repeat(1_500_000 - header.length);
    const marked = await svc.client.importPerformance(
      { ...META, csv: `\uFEFF${full}` },
      svc.as(testPrincipal()),
    );
    assert.equal(marked.created, true);
    const refused = await svc.client
      .importPerformance({ ...META, csv: `${full}x` }, svc.as(testPrincipal()))
      .then(
        () => assert.fail('a CSV of 1500001 characters was accepted'),
        (e: unknown) => ConnectError.from(e),
      );
    assert.equal(refused.code, Code.InvalidArgument);
    assert.equal(refused.rawMessage, 'csv must be 1 to 1500000 characters (got 1500001)');
  });

  test('a failed import never answers a later import of the same content: that one is read again', async () => {
    const who = testPrincipal();
    const csv = 'ad_id,impressions,clicks,spend\nad_1,1,1,x\n';
    const failed = await importAndWait(who, { ...META, csv });
    assert.equal(failed.imp.status, 'failed');
    const again = await importAndWait(who, { ...META, csv });
    assert.equal(again.created, true);
    assert.notEqual(again.imp.importId, failed.imp.importId);
    assert.equal(again.imp.status, 'failed');
    assert.equal(again.imp.errors[0]?.column, 'spend');
    // The audit's case: the same text once with a CRLF at its end, which used to fail.
    const crlf = await importAndWait(who, { ...META, csv: 'ad_id,impressions,clicks,spend\nad_1,1,1,\r\n' });
    assert.equal(crlf.imp.status, 'completed', JSON.stringify(crlf.imp.errors));
    const lf = await svc.client.importPerformance(
      { ...META, csv: 'ad_id,impressions,clicks,spend\nad_1,1,1,\n' },
      svc.as(who),
    );
    assert.equal(lf.created, false);
    assert.equal(lf.import?.importId, crlf.imp.importId);
  });
});

describe('refused requests', () => {
  const rows = [{ adId: 'ad_1', impressions: 1, clicks: 1, spend: 1 }];
  const cases: [string, ImportRequest, RegExp][] = [
    [
      'an unknown time zone',
      { ...META, timezone: 'Mars/Olympus', rows },
      /timezone must be an IANA time zone/,
    ],
    ['an offset as time zone', { ...META, timezone: '+05:00', rows }, /timezone must be an IANA time zone/],
    [
      'since after until',
      { ...META, since: '2026-11-01', until: '2026-10-01', rows },
      /since .* must not be after until/,
    ],
    ['a lowercase currency', { ...META, currency: 'eur', rows }, /currency must be three uppercase letters/],
    ['neither rows nor csv', { ...META }, /give either rows .* or csv/],
    ['both rows and csv', { ...META, rows, csv: 'ad_id\n' }, /not both/],
    [
      'a mapping without csv',
      { ...META, rows, columnMapping: { ad_id: 'Ad' } },
      /column_mapping applies only to csv/,
    ],
    [
      'a mapping of an unknown field',
      { ...META, csv: 'a\n', columnMapping: { email: 'E' } },
      /column_mapping\.email is not a row field/,
    ],
  ];
  for (const [what, req, message] of cases) {
    test(`${what} is refused as an invalid argument`, async () => {
      await assertRefused(
        svc.client.importPerformance(req, svc.as(testPrincipal())),
        Code.InvalidArgument,
        message,
      );
    });
  }

  test('a viewer may read imports but not import', async () => {
    const viewer = testPrincipal({ role: 'viewer', scopes: ['read'] });
    await assertRefused(
      svc.client.importPerformance({ ...META, rows }, svc.as(viewer)),
      Code.PermissionDenied,
      /write scope/,
    );
    const list = await svc.client.listPerformanceImports({}, svc.as(viewer));
    assert.equal(list.total, 0);
  });
});

describe('reading imports', () => {
  test('another workspace’s import is not found, and lists page newest first', async () => {
    const who = testPrincipal();
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const res = await svc.client.importPerformance(
        { ...META, name: `Import ${n}`, rows: [{ adId: 'ad_1', impressions: n, clicks: 0, spend: 0 }] },
        svc.as(who),
      );
      ids.push(res.import?.importId ?? '');
    }
    await assertRefused(
      svc.client.getPerformanceImport({ importId: ids[0] ?? '' }, svc.as(testPrincipal())),
      Code.NotFound,
      /no performance import/,
    );
    const page = await svc.client.listPerformanceImports({ limit: 2 }, svc.as(who));
    assert.equal(page.total, 3);
    assert.deepEqual(
      page.imports.map((i) => i.name),
      ['Import 3', 'Import 2'],
    );
    assert.equal(page.nextOffset, 2);
    const last = await svc.client.listPerformanceImports({ offset: 2, limit: 2 }, svc.as(who));
    assert.deepEqual(
      last.imports.map((i) => i.name),
      ['Import 1'],
    );
    assert.equal(last.nextOffset, undefined);
  });

  test('no next_offset points past the largest offset a list accepts (100000)', async () => {
    const who = testPrincipal();
    await svc.pool.query(
      `INSERT INTO performance_imports (workspace_id, import_id, source, name, currency, timezone, attribution,
         since, until, format, content_hash, status, created_by)
       SELECT $1, gen_random_uuid(), 'other', 'Import ' || n, 'EUR', 'UTC', 'last click', '2026-10-01',
              '2026-10-31', 'rows', encode(sha256(n::text::bytea), 'hex'), 'completed', 'test'
         FROM generate_series(1, 100005) AS n`,
      [who.workspaceId],
    );
    const last = await svc.client.listPerformanceImports({ offset: 100_000, limit: 2 }, svc.as(who));
    assert.deepEqual([last.total, last.imports.length, last.nextOffset], [100_005, 2, undefined]);
    const before = await svc.client.listPerformanceImports({ offset: 99_998, limit: 2 }, svc.as(who));
    assert.equal(before.nextOffset, 100_000);
  });
});

describe('an import whose processing never finished', () => {
  test('its give-up path marks it failed, saying it stopped and how many attempts were made, instead of leaving it running', async () => {
    const who = testPrincipal();
    const importId = randomUUID();
    await insertImport(svc.pool, {
      workspaceId: who.workspaceId,
      importId,
      meta: { ...META, source: 'vendor_a_ads' },
      format: 'rows',
      contentHash: createHash('sha256').update(importId).digest('hex'),
      inputRows: [],
      inputCsv: null,
      columnMapping: {},
      rowCount: 0,
      createdBy: 'test',
    });
    // As a worker killed mid-import leaves it: running, its message past its last attempt.
    await markRunning(svc.pool, who.workspaceId, importId);
    const giveUp = createImportGiveUp({ pool: svc.pool, logger: createLogger('marketing-test', 'silent') });
    await giveUp(
      {
        id: randomUUID(),
        topic: IMPORT_TOPIC,
        key: importId,
        payload: { workspace_id: who.workspaceId, import_id: importId },
        headers: {},
        attempt: 4,
        enqueuedAt: new Date(),
      },
      { inTx: (fn) => inTransaction(svc.pool, fn), signal: new AbortController().signal },
      { kind: 'abandoned', detail: 'lease expired on attempt 3 before the handler finished' },
    );
    const { import: imp } = await svc.client.getPerformanceImport({ importId }, svc.as(who));
    assert.equal(imp?.status, 'failed');
    assert.deepEqual(
      imp?.errors.map((e) => e.message),
      [
        'the import could not be processed after 4 attempts (its processing stopped before it finished (the worker was stopped or killed)); import it again',
      ],
    );
  });
});
