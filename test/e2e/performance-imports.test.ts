/**
 * Performance imports and business outcomes end to end: every process running (the import worker
 * on the marketing service's bus), driven through the official MCP clients with workspace tokens,
 * as an agent would use them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let featureless: McpTestClient;
let accountId: string;

const { ok, refused, call } = toolCalls(() => agent);

interface Metric {
  sum: string | null;
  known_rows: number;
}
interface Import {
  import_id: string;
  status: string;
  format: string;
  row_count: number;
  rows_saved: number;
  error_count: number;
  errors: { row: number; column: string | null; message: string; line: number | null }[];
  totals: Record<'impressions' | 'clicks' | 'spend' | 'conversions' | 'revenue', Metric> | null;
}
interface ImportResult {
  import: Import;
  created: boolean;
}

const META = {
  source: 'vendor_b_ads',
  name: 'October, vendor B',
  currency: 'EUR',
  timezone: 'Europe/Berlin',
  attribution: '7-day click, 1-day view',
  since: '2026-10-01',
  until: '2026-10-31',
};

/** The saved rows of an import, read from the marketing service's own tables. */
async function savedRows(importId: string): Promise<Record<string, string | null>[]> {
  const c = new pg.Client({ connectionString: e2e.db.url });
  await c.connect();
  try {
    const { rows } = await c.query(
      `SELECT ad_id, impressions::text, clicks::text, spend::text, revenue::text
         FROM marketing.performance_import_rows WHERE import_id = $1 ORDER BY row_number`,
      [importId],
    );
    return rows;
  } finally {
    await c.end();
  }
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000' } });
  ({ stack, seed } = e2e);
  const first = seed.accounts[0];
  assert.ok(first, 'the demo workspace has an ad account');
  accountId = first.account_id;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  featureless = await connectClient('v1', stack.mcpUrl, (await newWorkspaceToken(stack, 'No imports')).token);
});

after(async () => {
  await agent?.close();
  await featureless?.close();
  await e2e?.stop();
});

describe('ads_import_performance', () => {
  test('rows are imported: money exact in the given currency, null metrics stay unknown, totals exact', async () => {
    const res = await ok<ImportResult>('ads_import_performance', {
      ...META,
      rows: [
        { ad_id: 'ad_1', headline: 'Spring', impressions: 1000, clicks: 10, spend: 0.1, revenue: 12.3 },
        { ad_id: 'ad_2', impressions: null, clicks: null, spend: 0.2 },
      ],
    });
    assert.equal(res.created, true);
    assert.equal(res.import.status, 'completed');
    assert.equal(res.import.rows_saved, 2);
    assert.deepEqual(await savedRows(res.import.import_id), [
      { ad_id: 'ad_1', impressions: '1000', clicks: '10', spend: '0.1', revenue: '12.3' },
      { ad_id: 'ad_2', impressions: null, clicks: null, spend: '0.2', revenue: null },
    ]);
    assert.deepEqual(res.import.totals?.spend, { sum: '0.3', known_rows: 2 });
    assert.deepEqual(res.import.totals?.impressions, { sum: '1000', known_rows: 1 });
    assert.deepEqual(res.import.totals?.conversions, { sum: null, known_rows: 0 });
    const got = await ok<{ import: Import }>('ads_get_performance_import', {
      import_id: res.import.import_id,
    });
    assert.deepEqual(got.import, res.import);
  });

  test('row text may span lines, in rows as in a CSV cell: kept as written', async () => {
    const text = { headline: 'Two plants\nfor one', name: 'Spring\tA', hook: 'Free\nshipping' };
    const res = await ok<ImportResult>('ads_import_performance', {
      ...META,
      name: 'Line breaks',
      rows: [{ ad_id: 'ad_lines', ...text, impressions: 1, clicks: 0, spend: 0 }],
    });
    const c = new pg.Client({ connectionString: e2e.db.url });
    await c.connect();
    try {
      const { rows } = await c.query(
        'SELECT headline, name, hook FROM marketing.performance_import_rows WHERE import_id = $1',
        [res.import.import_id],
      );
      assert.deepEqual(rows, [text]);
    } finally {
      await c.end();
    }
  });

  test('a required metric left out is refused: null says unknown, a missing key is a mistake', async () => {
    const err = await refused('ads_import_performance', {
      ...META,
      rows: [{ ad_id: 'ad_1', clicks: 1, spend: 1 }],
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /`rows\[0\]\.impressions` is required/);
  });

  test('a CSV is imported with its column mapping', async () => {
    const csv = [
      'Ad ID,Impressions,Clicks,Amount spent (EUR),Notes',
      'ad_1,100,5,1.10,x',
      'ad_2,200,,2.20,',
    ].join('\n');
    const res = await ok<ImportResult>('ads_import_performance', {
      ...META,
      name: 'CSV import',
      csv,
      column_mapping: {
        ad_id: 'Ad ID',
        impressions: 'Impressions',
        clicks: 'Clicks',
        spend: 'Amount spent (EUR)',
      },
    });
    assert.equal(res.import.status, 'completed');
    assert.equal(res.import.format, 'csv');
    assert.equal(res.import.row_count, 2);
    assert.deepEqual(res.import.totals?.spend, { sum: '3.30', known_rows: 2 });
    assert.deepEqual(res.import.totals?.clicks, { sum: '5', known_rows: 1 });
  });

  test('a bad CSV row fails the import, named by row and column, and nothing is saved', async () => {
    const csv = ['ad_id,impressions,clicks,spend', 'ad_1,100,5,1.10', 'ad_2,lots,5,2.20', 'ad_3,1,1,1'].join(
      '\n',
    );
    const res = await call('ads_import_performance', { ...META, name: 'Bad CSV', csv });
    assert.equal(res.isError, true);
    const error = res.data.error as { code: string; message: string; import: Import };
    assert.equal(error.code, 'import_failed');
    assert.match(error.message, /row 2 column impressions \(line 3\): must be a whole number/);
    assert.match(error.message, /nothing was saved/);
    assert.equal(error.import.status, 'failed');
    assert.deepEqual(
      error.import.errors.map((e) => [e.row, e.column, e.line]),
      [[2, 'impressions', 3]],
    );
    assert.deepEqual(await savedRows(error.import.import_id), []);
    const got = await ok<{ import: Import }>('ads_get_performance_import', {
      import_id: error.import.import_id,
    });
    assert.equal(got.import.status, 'failed');
    assert.equal(got.import.rows_saved, 0);
  });

  test('a spreadsheet’s "CSV UTF-8" export (a byte-order mark, CRLF lines) is imported; a failed CSV is retried', async () => {
    const lines = ['ad_id,impressions,clicks,spend,revenue', 'ad_1,100,5,1.10,-5', 'ad_2,,,,'];
    const res = await ok<ImportResult>('ads_import_performance', {
      ...META,
      name: 'Exported CSV',
      csv: `\uFEFF${lines.join('\r\n')}\r\n`,
    });
    assert.equal(res.import.status, 'completed');
    assert.deepEqual(
      (await savedRows(res.import.import_id)).map((r) => r.ad_id),
      ['ad_1', 'ad_2'],
    );
    const bad = { ...META, name: 'Retried CSV', csv: 'ad_id,impressions,clicks,spend\nad_1,1,1,x\n' };
    const first = await call('ads_import_performance', bad);
    const again = await call('ads_import_performance', bad);
    const failed = (r: typeof first) => (r.data.error as { code: string; import: Import }).import;
    assert.equal((again.data.error as { code: string }).code, 'import_failed');
    assert.notEqual(failed(again).import_id, failed(first).import_id, 'a failed import is not the answer');
  });

  test('the same content imported again returns the first import, not a second copy', async () => {
    const args = { ...META, name: 'Twice', rows: [{ ad_id: 'ad_7', impressions: 7, clicks: 0, spend: 7 }] };
    const first = await ok<ImportResult>('ads_import_performance', args);
    const again = await ok<ImportResult>('ads_import_performance', args);
    assert.equal(again.created, false);
    assert.equal(again.import.import_id, first.import.import_id);
    const list = await ok<{ imports: Import[] }>('ads_list_performance_imports', { limit: 100 });
    assert.equal(list.imports.filter((i) => i.import_id === first.import.import_id).length, 1);
  });

  test('an unknown time zone and since after until are refused, naming the field', async () => {
    const rows = [{ ad_id: 'ad_1', impressions: 1, clicks: 1, spend: 1 }];
    const zone = await refused('ads_import_performance', { ...META, timezone: 'Europe/Atlantis', rows });
    assert.match(zone.message, /timezone must be an IANA time zone/);
    const dates = await refused('ads_import_performance', { ...META, since: '2026-11-01', rows });
    assert.match(dates.message, /since \(2026-11-01\) must not be after until/);
  });

  test('a workspace without the performance_imports feature is refused', async () => {
    for (const [tool, args] of [
      ['ads_import_performance', { ...META, rows: [{ ad_id: 'a', impressions: 1, clicks: 1, spend: 1 }] }],
      ['ads_list_performance_imports', {}],
      ['ads_get_performance_import', { import_id: randomUUID() }],
    ] as const) {
      const err = await refused(tool, args, featureless);
      assert.equal(err.code, 'feature_disabled', tool);
      assert.match(err.message, /performance_imports/);
    }
  });
});

describe('progress notifications', () => {
  const csv = [
    'ad_id,impressions,clicks,spend',
    ...Array.from({ length: 2000 }, (_, i) => `ad_${i},${i},1,0.5`),
  ].join('\n');
  type Progress = { progress: number; total?: number; message?: string };

  test('a v2 client that asks for progress receives notifications until the import completes', async () => {
    const client = new ClientV2({ name: 'e2e-progress', version: '1.0.0' });
    await client.connect(
      new TransportV2(new URL(stack.mcpUrl), { authProvider: { token: async () => seed.token } }),
    );
    try {
      const seen: Progress[] = [];
      const res = await client.callTool(
        { name: 'ads_import_performance', arguments: { ...META, name: 'Progress v2', csv } },
        { onprogress: (p: Progress) => seen.push(p) },
      );
      assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
      assertProgress(seen);
    } finally {
      await client.close();
    }
  });

  test('a v1 client that asks for progress receives notifications too', async () => {
    const client = new ClientV1({ name: 'e2e-progress-v1', version: '1.0.0' });
    await client.connect(
      new TransportV1(new URL(stack.mcpUrl), {
        requestInit: { headers: { authorization: `Bearer ${seed.token}` } },
      }),
    );
    try {
      const seen: Progress[] = [];
      const res = await client.callTool(
        { name: 'ads_import_performance', arguments: { ...META, name: 'Progress v1', csv } },
        undefined,
        { onprogress: (p: Progress) => seen.push(p) },
      );
      assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
      assertProgress(seen);
    } finally {
      await client.close();
    }
  });

  function assertProgress(seen: Progress[]): void {
    assert.ok(seen.length >= 2, `progress notifications: ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok((seen[i]?.progress ?? 0) > (seen[i - 1]?.progress ?? 0));
    assert.equal(seen[0]?.message, 'import queued');
    assert.match(seen.at(-1)?.message ?? '', /import completed: 2000 rows saved/);
    assert.equal(seen.at(-1)?.total, 3);
  }
});

describe('ads_import_business_outcomes', () => {
  const outcome = (id: string, patch: Record<string, unknown> = {}) => ({
    external_id: id,
    occurred_at: '2026-10-12T14:30:00+02:00',
    kind: 'order',
    ad_id: 'ad_1',
    value: '49.90',
    ...patch,
  });
  const importArgs = (rows: unknown[], source = 'crm-eu') => ({
    account_id: accountId,
    source,
    name: 'October orders',
    currency: 'EUR',
    attribution: 'last click within 7 days',
    rows,
  });
  interface OutcomeImport {
    received: number;
    saved: number;
    skipped_duplicates: number;
  }

  test('exact duplicates are skipped and counted, within the request and against saved outcomes', async () => {
    const first = await ok<{ import: OutcomeImport }>(
      'ads_import_business_outcomes',
      importArgs([outcome('o1'), outcome('o1'), outcome('l1', { kind: 'qualified_lead', value: undefined })]),
    );
    assert.deepEqual([first.import.received, first.import.saved, first.import.skipped_duplicates], [3, 2, 1]);
    const second = await ok<{ import: OutcomeImport }>(
      'ads_import_business_outcomes',
      importArgs([outcome('o1'), outcome('o2', { kind: 'refund', refund_of: 'o1' })]),
    );
    assert.deepEqual(
      [second.import.received, second.import.saved, second.import.skipped_duplicates],
      [2, 1, 1],
    );
  });

  test('a conflicting duplicate fails the whole import atomically, naming the id', async () => {
    const err = await refused(
      'ads_import_business_outcomes',
      importArgs([outcome('o3'), outcome('o1', { value: '59.90' })]),
    );
    assert.equal(err.code, 'failed_precondition');
    assert.match(err.message, /external_id "o1" of source crm-eu was imported before with different content/);
    // o3 was not saved: importing it now saves it.
    const now = await ok<{ import: OutcomeImport }>(
      'ads_import_business_outcomes',
      importArgs([outcome('o3')]),
    );
    assert.equal(now.import.saved, 1);
  });

  test('values that look like an email address or a phone number are refused, naming the field', async () => {
    const email = await refused(
      'ads_import_business_outcomes',
      importArgs([outcome('jane.doe@example.com')]),
    );
    assert.equal(email.code, 'invalid_argument');
    assert.match(email.message, /rows\[0\]\.external_id looks like an email address/);
    const phone = await refused('ads_import_business_outcomes', importArgs([outcome('+49 30 1234567')]));
    assert.match(phone.message, /rows\[0\]\.external_id looks like a phone number/);
  });

  test('customer fields are not accepted', async () => {
    const err = await refused(
      'ads_import_business_outcomes',
      importArgs([outcome('o9', { customer_email: 'x' })]),
    );
    assert.match(err.message, /unknown property of `rows\[0\]` `customer_email`/);
  });

  test('an account that is not the workspace’s is refused', async () => {
    const err = await refused('ads_import_business_outcomes', {
      ...importArgs([outcome('o9')]),
      account_id: randomUUID(),
    });
    assert.equal(err.code, 'not_found');
  });
});
