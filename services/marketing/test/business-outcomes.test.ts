/** Business-outcome imports through the marketing service, over a real database. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type BusinessOutcomeRowSchema, ImportService } from '@adsmcp/proto/marketing/v1/imports_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import type { PoolClient } from '@adsmcp/runtime/db';
import type { Principal } from '@adsmcp/runtime/principal';
import {
  assertRefused,
  type ServiceUnderTest,
  startServiceUnderTest,
  testPrincipal,
} from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import { canonicalDecimal, validateOutcomeImport } from '../src/domain/business-outcomes.ts';
import { personalDataIn } from '../src/domain/personal-data.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { saveOutcomes } from '../src/store/outcome-store.ts';

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

type Row = MessageInitShape<typeof BusinessOutcomeRowSchema>;

const ACCOUNT = randomUUID();
const order = (id: string, value = '49.90'): Row => ({
  externalId: id,
  occurredAt: '2026-10-12T14:30:00+02:00',
  kind: 'order',
  adId: 'ad_1',
  value,
  quantity: 2,
});

function importOutcomes(who: Principal, rows: Row[], source = 'crm-eu') {
  return svc.client.importBusinessOutcomes(
    { accountId: ACCOUNT, source, name: 'October', currency: 'EUR', attribution: 'last click, 7 days', rows },
    svc.as(who),
  );
}

async function savedIds(who: Principal): Promise<string[]> {
  const { rows } = await svc.pool.query(
    'SELECT external_id FROM business_outcomes WHERE workspace_id = $1 ORDER BY external_id',
    [who.workspaceId],
  );
  return rows.map((r) => r.external_id as string);
}

describe('duplicates', () => {
  test('exact repeats within the request and of saved outcomes are skipped and counted', async () => {
    const who = testPrincipal();
    const first = await importOutcomes(who, [order('o1'), order('o1'), order('o2')]);
    assert.deepEqual(
      [first.import?.received, first.import?.saved, first.import?.skippedDuplicates],
      [3, 2, 1],
    );
    // The same instant in another offset and the same value written differently are the same content.
    const same = { ...order('o2', '049.900'), occurredAt: '2026-10-12T12:30:00Z' };
    const second = await importOutcomes(who, [order('o1'), same, order('o3')]);
    assert.deepEqual(
      [second.import?.received, second.import?.saved, second.import?.skippedDuplicates],
      [3, 1, 2],
    );
    assert.deepEqual(await savedIds(who), ['o1', 'o2', 'o3']);
  });

  test('a saved id with other content fails the whole import, naming it, and saves nothing of it', async () => {
    const who = testPrincipal();
    await importOutcomes(who, [order('o1')]);
    await assertRefused(
      importOutcomes(who, [order('o9'), order('o1', '50.00')]),
      Code.FailedPrecondition,
      /external_id "o1" of source crm-eu was imported before with different content; nothing was imported/,
    );
    assert.deepEqual(await savedIds(who), ['o1']);
    const { rows } = await svc.pool.query(
      'SELECT count(*)::int AS n FROM business_outcome_imports WHERE workspace_id = $1',
      [who.workspaceId],
    );
    assert.equal(rows[0].n, 1);
  });

  test('occurred_at keeps every digit given: instants apart by less than a millisecond are different content', async () => {
    const who = testPrincipal();
    const at = (id: string, occurredAt: string) => ({ ...order(id), occurredAt });
    await assertRefused(
      importOutcomes(who, [
        at('ms2', '2026-10-12T10:00:00.000100Z'),
        at('ms2', '2026-10-12T10:00:00.000900Z'),
      ]),
      Code.InvalidArgument,
      /external_id "ms2" appears more than once with different content/,
    );
    const first = await importOutcomes(who, [at('ms1', '2026-10-12T12:00:00.0001+02:00')]);
    assert.equal(first.import?.saved, 1);
    await assertRefused(
      importOutcomes(who, [at('ms1', '2026-10-12T10:00:00.0009Z')]),
      Code.FailedPrecondition,
      /external_id "ms1" of source crm-eu was imported before with different content/,
    );
    // The same instant written with another offset and trailing zeros is an exact repeat.
    const again = await importOutcomes(who, [at('ms1', '2026-10-12T10:00:00.000100000Z')]);
    assert.deepEqual([again.import?.saved, again.import?.skippedDuplicates], [0, 1]);
    const { rows } = await svc.pool.query(
      `SELECT occurred_at_text, to_char(occurred_at AT TIME ZONE 'UTC', 'HH24:MI:SS.US') AS utc
         FROM business_outcomes WHERE workspace_id = $1`,
      [who.workspaceId],
    );
    assert.deepEqual(rows, [{ occurred_at_text: '2026-10-12T12:00:00.0001+02:00', utc: '10:00:00.000100' }]);
  });

  test('an outcome saved before instants kept sub-millisecond digits is compared to the millisecond', async () => {
    const who = testPrincipal();
    await importOutcomes(who, [{ ...order('old'), occurredAt: '2026-10-12T10:00:00.0004Z' }]);
    // As an outcome saved before: its fingerprint took the instant cut to the millisecond.
    const cut = await importOutcomes(testPrincipal(), [
      { ...order('old'), occurredAt: '2026-10-12T10:00:00.000Z' },
    ]);
    assert.equal(cut.import?.saved, 1);
    const { rows } = await svc.pool.query(`SELECT fingerprint FROM business_outcomes WHERE import_id = $1`, [
      cut.import?.importId,
    ]);
    await svc.pool.query(
      `UPDATE business_outcomes SET occurred_at_text = NULL, fingerprint = $2
        WHERE workspace_id = $1 AND external_id = 'old'`,
      [who.workspaceId, rows[0].fingerprint],
    );
    const again = await importOutcomes(who, [{ ...order('old'), occurredAt: '2026-10-12T10:00:00.0004Z' }]);
    assert.deepEqual([again.import?.saved, again.import?.skippedDuplicates], [0, 1]);
  });

  test('a repeated id with other content within the request is refused, naming it', async () => {
    const who = testPrincipal();
    await assertRefused(
      importOutcomes(who, [order('o1'), order('o2'), { ...order('o1'), kind: 'booking' }]),
      Code.InvalidArgument,
      /external_id "o1" appears more than once with different content/,
    );
    assert.deepEqual(await savedIds(who), []);
  });

  test('the same id from another source or another workspace is another outcome', async () => {
    const who = testPrincipal();
    await importOutcomes(who, [order('o1')]);
    const other = await importOutcomes(who, [order('o1', '1')], 'shop');
    assert.equal(other.import?.saved, 1);
    const elsewhere = await importOutcomes(testPrincipal(), [order('o1', '2')]);
    assert.equal(elsewhere.import?.saved, 1);
  });
});

describe('no personal data', () => {
  const cases: [string, Row, RegExp][] = [
    [
      'an email as external_id',
      { ...order('x'), externalId: 'jane@example.com' },
      /rows\[0\]\.external_id looks like an email address/,
    ],
    [
      'a phone number as external_id',
      { ...order('x'), externalId: '+1 (555) 123-4567' },
      /rows\[0\]\.external_id looks like a phone number/,
    ],
    [
      'a phone number as ad_id',
      { ...order('x'), adId: '555-123-4567' },
      /rows\[0\]\.ad_id looks like a phone number/,
    ],
    [
      'an email in refund_of',
      { ...order('x'), kind: 'refund', refundOf: 'a.b@shop.example' },
      /rows\[0\]\.refund_of looks like an email/,
    ],
  ];
  for (const [what, row, message] of cases) {
    test(`${what} is refused, naming the field`, async () => {
      await assertRefused(importOutcomes(testPrincipal(), [row]), Code.InvalidArgument, message);
    });
  }

  const disguised: [string, string][] = [
    [
      '\uFF4A\uFF4F\uFF48\uFF4E\uFF20\uFF45\uFF58\uFF41\uFF4D\uFF50\uFF4C\uFF45\uFF0E\uFF43\uFF4F\uFF4D',
      'an email address',
    ],
    ['john (at) example (dot) com', 'an email address'],
    ['john[at]example[.]com', 'an email address'],
    ['john at example dot com', 'an email address'],
    ['john at example.com', 'an email address'],
    ['john_at_example_dot_com', 'an email address'],
    ['john @ example . com', 'an email address'],
    ['jo\u200Bhn@example.com', 'an email address'],
    ['jane\uFE6Bexample.com', 'an email address'],
    ['\uFF0B\uFF14\uFF19 \uFF13\uFF10 \uFF11\uFF12\uFF13\uFF14\uFF15\uFF16\uFF17', 'a phone number'],
    ['555 123 4567', 'a phone number'],
    ['555.123.4567', 'a phone number'],
    ['lead 555-123-4567', 'a phone number'],
    ['lead (555) 123-4567', 'a phone number'],
    ['lead 030 1234567', 'a phone number'],
    ['tel:5551234567', 'a phone number'],
  ];

  test('contact details in full-width, spelled-out or embedded forms are refused in an id, naming the field and saving nothing', async () => {
    const who = testPrincipal();
    for (const [i, [id, looks]] of disguised.entries()) {
      const rows = [
        order('ord_ok_1'),
        order('ord_ok_2'),
        order('ord_ok_3'),
        { ...order('x'), externalId: id },
      ];
      await assertRefused(
        importOutcomes(who, rows),
        Code.InvalidArgument,
        new RegExp(
          `^rows\\[3\\]\\.external_id looks like ${looks}; customer contact details are not accepted`,
        ),
      );
      assert.equal(personalDataIn(id, 'id'), looks, `${i}: ${id}`);
    }
    assert.deepEqual(await savedIds(who), [], 'nothing of a refused import is saved');
  });

  test('ids, dates and order numbers are not mistaken for contact details', () => {
    for (const ok of [
      'ord_5001',
      '2026-10-12-0001',
      'order 2026-10-12-0001',
      '15551234567',
      'ad:1234567',
      'cmp-2026-10',
      '49.90',
      'ORD-555-123-4567',
      'INV-2026-1234-5678',
      'cmp_2026_10_20',
      'sku 12-34-56',
      'batch 12 345 678',
      'order at 12.50',
      'tel-2026',
    ])
      assert.equal(personalDataIn(ok, 'id'), undefined, ok);
    for (const bad of ['+4930123456', '030 1234 5678', 'call +44 20 7946 0958 now'])
      assert.equal(personalDataIn(bad), 'a phone number', bad);
  });

  test('in free text the word "at" alone is a sentence, not an address; spelled out with its dot it is one', () => {
    assert.equal(personalDataIn('last click at shop.example, 7 days'), undefined);
    assert.equal(personalDataIn('Leads at the Berlin fair'), undefined);
    assert.equal(personalDataIn('ask jane at example dot com'), 'an email address');
    assert.equal(personalDataIn('ask jane(at)example.com'), 'an email address');
  });
});

describe('row rules', () => {
  test('a value is required except for a qualified lead; refund_of only for a refund', async () => {
    const who = testPrincipal();
    const lead: Row = {
      externalId: 'l1',
      occurredAt: '2026-10-12T09:00:00Z',
      kind: 'qualified_lead',
      adId: 'ad_1',
    };
    const res = await importOutcomes(who, [lead]);
    assert.equal(res.import?.saved, 1);
    await assertRefused(
      importOutcomes(who, [{ ...order('o1'), value: undefined }]),
      Code.InvalidArgument,
      /rows\[0\]\.value is required when kind is order/,
    );
    await assertRefused(
      importOutcomes(who, [{ ...order('o1'), refundOf: 'o0' }]),
      Code.InvalidArgument,
      /rows\[0\]\.refund_of is only for a refund/,
    );
    await assertRefused(
      importOutcomes(who, [{ ...order('r1'), kind: 'refund', refundOf: 'r1' }]),
      Code.InvalidArgument,
      /rows\[0\]\.refund_of names the refund itself \("r1"\); give the external_id of the order it refunds/,
    );
    await assertRefused(
      importOutcomes(who, [{ ...order('o1'), occurredAt: '2026-10-12T09:00:00' }]),
      Code.InvalidArgument,
      /occurred_at must be a date-time with an offset/,
    );
    // Beyond what can be stored, and hour 24: refused by name, before anything is written.
    await assertRefused(
      importOutcomes(who, [{ ...order('o1'), occurredAt: '9999-12-31T23:59:59-14:00' }]),
      Code.InvalidArgument,
      /rows\[0\]\.occurred_at must be a date-time with an offset .*: its instant in UTC must fall in the years 0001 to 9999/,
    );
    await assertRefused(
      importOutcomes(who, [{ ...order('o1'), occurredAt: '2026-02-10T24:00:00Z' }]),
      Code.InvalidArgument,
      /rows\[0\]\.occurred_at .*: hours run 00 to 23/,
    );
  });

  test('a refund names an order or booking of its account and currency, and the refunds of one never exceed its value', async () => {
    const who = testPrincipal();
    const refund = (id: string, of: string, value: string): Row => ({
      ...order(id, value),
      kind: 'refund',
      refundOf: of,
      quantity: undefined,
    });
    const first = await importOutcomes(who, [order('o1', '10.00'), refund('r1', 'o1', '4.5')]);
    assert.equal(first.import?.saved, 2);
    // Within one request: a refund of a refund, a refund of a lead, more back than was paid.
    await assertRefused(
      importOutcomes(who, [refund('r2', 'r1', '1')]),
      Code.FailedPrecondition,
      /refund_of of external_id "r2" names "r1", which is a refund; give the external_id of the order or booking it refunds; nothing was imported/,
    );
    await assertRefused(
      importOutcomes(who, [
        { externalId: 'l1', occurredAt: '2026-10-12T09:00:00Z', kind: 'qualified_lead', adId: 'ad_1' },
        refund('r3', 'l1', '1'),
      ]),
      Code.InvalidArgument,
      /refund_of of external_id "r3" names "l1", which is a qualified_lead \(it has no value to refund\)/,
    );
    await assertRefused(
      importOutcomes(who, [order('o2', '10'), refund('r4', 'o2', '6'), refund('r5', 'o2', '4.01')]),
      Code.InvalidArgument,
      /the refunds of external_id "o2" \("r4", "r5"\) come to 10.01 EUR, more than its value of 10 EUR/,
    );
    // Against what was saved: o1 has 5.5 left to refund; another currency or account is refused.
    await assertRefused(
      importOutcomes(who, [refund('r6', 'o1', '5.51')]),
      Code.FailedPrecondition,
      /the refunds of external_id "o1" \("r1", "r6"\) come to 10.01 EUR, more than its value of 10 EUR/,
    );
    await assertRefused(
      svc.client.importBusinessOutcomes(
        {
          accountId: ACCOUNT,
          source: 'crm-eu',
          name: 'October',
          currency: 'USD',
          attribution: 'a',
          rows: [refund('r7', 'o1', '1')],
        },
        svc.as(who),
      ),
      Code.FailedPrecondition,
      /names "o1", which is in EUR where the refund is in USD/,
    );
    await assertRefused(
      svc.client.importBusinessOutcomes(
        {
          accountId: randomUUID(),
          source: 'crm-eu',
          name: 'October',
          currency: 'EUR',
          attribution: 'a',
          rows: [refund('r8', 'o1', '1')],
        },
        svc.as(who),
      ),
      Code.FailedPrecondition,
      /names "o1", an outcome of another ad account/,
    );
    // An order imported after a refund that names it is held to the same rules.
    await importOutcomes(who, [refund('r9', 'o3', '20')]);
    await assertRefused(
      importOutcomes(who, [order('o3', '15')]),
      Code.FailedPrecondition,
      /the refunds of external_id "o3" \("r9"\) come to 20 EUR, more than its value of 15 EUR/,
    );
    const rest = await importOutcomes(who, [
      refund('r10', 'o1', '5.5'),
      order('o3', '20'),
      refund('r11', 'unknown', '99'),
    ]);
    assert.equal(rest.import?.saved, 3);
    assert.deepEqual(await savedIds(who), ['o1', 'o3', 'r1', 'r10', 'r11', 'r9']);
  });

  /** One row of an import of `who`'s, saved straight through the store in the transaction of `db`. */
  const saveRow =
    (who: Principal) =>
    (db: PoolClient, row: { external_id: string; kind: string } & Record<string, string>) =>
      saveOutcomes(db, {
        workspaceId: who.workspaceId,
        importId: randomUUID(),
        request: validateOutcomeImport({
          accountId: ACCOUNT,
          source: 'crm-eu',
          name: 'October',
          currency: 'EUR',
          attribution: 'a',
          rows: [{ occurred_at: '2026-10-13T10:00:00Z', ad_id: 'ad_1', ...row }],
        }),
        createdBy: 'test',
      });

  /**
   * Saves `first` in a transaction left open, then `second` in another, which must wait for the
   * first: 200 ms later the first commits, and the second is refused as `refused` says.
   */
  async function secondWaitsAndIsRefused(
    save: ReturnType<typeof saveRow>,
    first: Parameters<ReturnType<typeof saveRow>>[1],
    second: Parameters<ReturnType<typeof saveRow>>[1],
    refused: RegExp,
  ): Promise<void> {
    const a = await svc.pool.connect();
    const b = await svc.pool.connect();
    try {
      await a.query('BEGIN');
      await save(a, first);
      await b.query('BEGIN');
      const waiting = save(b, second);
      waiting.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await a.query('COMMIT');
      await assert.rejects(waiting, refused);
    } finally {
      await b.query('ROLLBACK');
      a.release();
      b.release();
    }
  }

  test('an import refunding an order another import is refunding waits for it, and then sees its refund', async () => {
    const who = testPrincipal();
    await importOutcomes(who, [order('o1', '10')]);
    const refund = (id: string) => ({ external_id: id, kind: 'refund', value: '6', refund_of: 'o1' });
    // Committed, the first's refund leaves 4 to refund.
    await secondWaitsAndIsRefused(
      saveRow(who),
      refund('ra'),
      refund('rb'),
      /the refunds of external_id "o1" \("ra", "rb"\) come to 12 EUR/,
    );
    assert.deepEqual(await savedIds(who), ['o1', 'ra']);
  });

  test('an import bringing an order waits for one refunding it that is not saved yet, and then holds its refunds to it', async () => {
    const who = testPrincipal();
    // A refund of 60 for an order not imported yet, and, at the same time, that order of 50.
    await secondWaitsAndIsRefused(
      saveRow(who),
      { external_id: 'r1', kind: 'refund', value: '60', refund_of: 'o9' },
      { external_id: 'o9', kind: 'order', value: '50' },
      /the refunds of external_id "o9" \("r1"\) come to 60 EUR, more than its value of 50 EUR/,
    );
    assert.deepEqual(await savedIds(who), ['r1']);
  });

  test('two imports bringing the same ids in opposite orders at once both end, one saving them and the other skipping them', async () => {
    const who = testPrincipal();
    const ids = Array.from({ length: 2000 }, (_, i) => `d${String(i).padStart(4, '0')}`);
    // Inserted row by row in request order, each would wait on the other's rows: a deadlock,
    // which PostgreSQL ends by failing one of them.
    const [a, b] = await Promise.all([
      importOutcomes(
        who,
        ids.map((id) => order(id)),
      ),
      importOutcomes(
        who,
        [...ids].reverse().map((id) => order(id)),
      ),
    ]);
    assert.deepEqual([a.import?.saved, b.import?.saved].sort(), [0, 2000]);
    assert.deepEqual([a.import?.skippedDuplicates, b.import?.skippedDuplicates].sort(), [0, 2000]);
    assert.equal((await savedIds(who)).length, 2000);
  });

  test('decimals are compared exactly', () => {
    assert.equal(canonicalDecimal('049.900'), '49.9');
    assert.equal(canonicalDecimal('0.000'), '0');
    assert.equal(canonicalDecimal('100'), '100');
  });
});
