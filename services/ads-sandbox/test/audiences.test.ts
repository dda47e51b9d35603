import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ErrorJson, Sandbox, SandboxAccount } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';

interface AudienceJson {
  id: string;
  name: string;
  status: string;
  revision: number;
  policy_revision: string;
  eligible_uses: string[];
  matched_count: number | null;
  matched_count_range: { lower_bound: number; upper_bound: number } | null;
  latest_operation: { id: string; type: string; status: string } | null;
}
interface OperationJson {
  id: string;
  custom_audience_id: string;
  type: string;
  status: string;
  revision: number;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  matched_count: number | null;
  matched_count_range: { lower_bound: number; upper_bound: number } | null;
}
interface Page<T> {
  data: T[];
  paging: { after: string | null; before: string | null; has_more: boolean };
}

/** The fake clock operations progress by. */
let clock = Date.parse('2026-11-20T12:00:00Z');
let sb: Sandbox;

before(async () => {
  sb = await startSandbox({ now: () => clock });
});

after(async () => {
  await sb?.stop();
});

const call = <T>(a: SandboxAccount, method: string, path: string, body?: unknown, key?: string) =>
  sb.call<T>(method, path, {
    token: a.credential,
    ...(body === undefined ? {} : { body }),
    ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
  });

async function audiences(a: SandboxAccount, query = ''): Promise<AudienceJson[]> {
  const res = await call<Page<AudienceJson>>(a, 'GET', `/custom_audiences${query}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

async function audienceNamed(a: SandboxAccount, name: string, query = ''): Promise<AudienceJson> {
  const found = (await audiences(a, query)).find((x) => x.name === name);
  assert.ok(found !== undefined, name);
  return found;
}

const replaceBody = (revision: number) => ({
  file_id: 'file_members_2026_11',
  expected_revision: revision,
  filename: 'members.csv',
  mimetype: 'text/csv',
  file_size: 2_600_000,
  identifier_type: 'email',
  identifier_resolution: 'auto',
});

describe('GET /custom_audiences', () => {
  it('lists the seeded audiences with privacy-safe counts', async () => {
    const a = await sb.newAccount();
    const list = await audiences(a);
    assert.deepEqual(
      list.map((x) => [x.name, x.status, x.revision]),
      [
        ['Newsletter subscribers', 'active', 0],
        ['Past purchasers (180 days)', 'active', 0],
        ['Cart abandoners', 'active', 0],
        ['VIP customers', 'active', 0],
        ['Lapsed customers 2024', 'archived', 0],
      ],
    );
    // Without matched_count_granularity only a power-of-ten range is shown.
    assert.equal(list[0]?.matched_count, null);
    assert.deepEqual(list[0]?.matched_count_range, { lower_bound: 10_000, upper_bound: 100_000 });
    const granular = await audiences(a, '?matched_count_granularity=granular');
    assert.deepEqual(
      granular.map((x) => x.matched_count),
      [48_000, 13_000, 3_400, null, 22_000],
    );
  });

  it('filters by intended use, ids and policy revision', async () => {
    const a = await sb.newAccount();
    const names = (list: AudienceJson[]) => list.map((x) => x.name);
    assert.deepEqual(names(await audiences(a, '?intended_use=inclusion')), [
      'Newsletter subscribers',
      'Past purchasers (180 days)',
      'Cart abandoners',
    ]);
    assert.deepEqual(names(await audiences(a, '?intended_use=exclusion')), [
      'Newsletter subscribers',
      'Past purchasers (180 days)',
      'Cart abandoners',
      'VIP customers',
    ]);
    assert.deepEqual(names(await audiences(a, '?intended_use=bid_multiplier')), [
      'Newsletter subscribers',
      'Past purchasers (180 days)',
    ]);
    const all = await audiences(a);
    const [first, , third] = all;
    assert.deepEqual(
      names(await audiences(a, `?custom_audience_ids=${first?.id}&custom_audience_ids=${third?.id}`)),
      ['Newsletter subscribers', 'Cart abandoners'],
    );
    const lapsed = all[4];
    assert.deepEqual(names(await audiences(a, `?policy_revision=${lapsed?.policy_revision}`)), [
      'Lapsed customers 2024',
    ]);
  });

  it('pages with cursors', async () => {
    const a = await sb.newAccount();
    const first = await call<Page<AudienceJson>>(a, 'GET', '/custom_audiences?limit=2');
    assert.equal(first.body.data.length, 2);
    assert.equal(first.body.paging.has_more, true);
    const second = await call<Page<AudienceJson>>(
      a,
      'GET',
      `/custom_audiences?limit=2&after=${first.body.paging.after}`,
    );
    assert.deepEqual(
      second.body.data.map((x) => x.name),
      ['Cart abandoners', 'VIP customers'],
    );
    const back = await call<Page<AudienceJson>>(
      a,
      'GET',
      `/custom_audiences?limit=2&before=${second.body.paging.before}`,
    );
    assert.deepEqual(back.body.data, first.body.data);
    const desc = await audiences(a, '?order=desc&limit=1');
    assert.equal(desc[0]?.name, 'Lapsed customers 2024');
  });

  it('refuses bad filters, naming the parameter', async () => {
    const a = await sb.newAccount();
    const ids = Array.from(
      { length: 501 },
      (_, i) => `custom_audience_ids=ca_${String(i).padStart(16, '0')}`,
    ).join('&');
    const cases: [string, string][] = [
      ['intended_use=targeting', 'intended_use'],
      [ids, 'custom_audience_ids'],
      [`policy_revision=${'a'.repeat(63)}`, 'policy_revision'],
      ['matched_count_granularity=exact', 'matched_count_granularity'],
      ['limit=501', 'limit'],
      ['order=sideways', 'order'],
      ['after=xyz', 'after'],
      ['name=foo', 'name'],
    ];
    for (const [query, field] of cases) {
      const res = await call<ErrorJson>(a, 'GET', `/custom_audiences?${query}`);
      assert.equal(res.status, 400, query.slice(0, 80));
      assert.equal(res.body.error.field, field, query.slice(0, 80));
    }
  });
});

describe('GET /custom_audiences/{id}', () => {
  it('reads one audience as the list shows it, and 404s for an unknown one', async () => {
    const a = await sb.newAccount();
    const listed = await audienceNamed(a, 'VIP customers', '?matched_count_granularity=granular');
    const one = await call<AudienceJson>(
      a,
      'GET',
      `/custom_audiences/${listed.id}?matched_count_granularity=granular`,
    );
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, listed);
    const other = await sb.newAccount();
    const missing = await call<ErrorJson>(other, 'GET', `/custom_audiences/${listed.id}`);
    assert.equal(missing.status, 404);
  });
});

describe('POST /custom_audiences/{id}/replace', () => {
  it('starts an operation that goes from pending to processing to completed as time passes', async () => {
    const a = await sb.newAccount();
    const audience = await audienceNamed(a, 'Cart abandoners');
    const res = await call<OperationJson>(
      a,
      'POST',
      `/custom_audiences/${audience.id}/replace`,
      replaceBody(0),
    );
    assert.equal(res.status, 202);
    const op = res.body;
    assert.match(op.id, /^op_[0-9a-f]{16}$/);
    assert.equal(op.custom_audience_id, audience.id);
    assert.equal(op.type, 'replace');
    assert.equal(op.status, 'pending');
    assert.equal(op.revision, 1);
    assert.equal(op.matched_count, null);
    assert.equal(op.started_at, null);

    const read = () => call<OperationJson>(a, 'GET', `/custom_audiences/${audience.id}/operations/${op.id}`);
    const saved = clock;
    try {
      assert.equal((await read()).body.status, 'pending');
      clock = saved + 6_000;
      const processing = await read();
      assert.equal(processing.body.status, 'processing');
      assert.equal(processing.body.started_at, new Date(saved + 5_000).toISOString());
      assert.equal(processing.body.matched_count, null);
      // The audience keeps its old count until the replacement completes.
      assert.equal(
        (await audienceNamed(a, 'Cart abandoners', '?matched_count_granularity=granular')).matched_count,
        3_400,
      );

      clock = saved + 31_000;
      const done = await read();
      assert.equal(done.status, 200);
      assert.equal(done.body.status, 'completed');
      assert.equal(done.body.completed_at, new Date(saved + 30_000).toISOString());
      const matched = done.body.matched_count;
      assert.ok(matched !== null && matched >= 1000);
      // Two significant figures at most: never an exact count.
      assert.equal(Number(String(matched).replace(/0+$/, '')) < 100, true);
      assert.deepEqual(Object.keys(done.body).sort(), [
        'completed_at',
        'created_at',
        'custom_audience_id',
        'id',
        'matched_count',
        'matched_count_range',
        'revision',
        'started_at',
        'status',
        'type',
      ]);
      const after = await audienceNamed(a, 'Cart abandoners', '?matched_count_granularity=granular');
      assert.equal(after.matched_count, matched);
      assert.equal(after.revision, 1);
      assert.deepEqual(after.latest_operation, { id: op.id, type: 'replace', status: 'completed' });
    } finally {
      clock = saved;
    }
  });

  it('refuses a stale expected_revision with 409 naming the current revision', async () => {
    const a = await sb.newAccount();
    const audience = await audienceNamed(a, 'Newsletter subscribers');
    const first = await call<OperationJson>(
      a,
      'POST',
      `/custom_audiences/${audience.id}/replace`,
      replaceBody(0),
    );
    assert.equal(first.status, 202);
    const stale = await call<ErrorJson>(
      a,
      'POST',
      `/custom_audiences/${audience.id}/replace`,
      replaceBody(0),
    );
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'revision_mismatch');
    assert.equal(stale.body.error.field, 'expected_revision');
    assert.match(stale.body.error.message, /current revision 1/);
    const next = await call<OperationJson>(
      a,
      'POST',
      `/custom_audiences/${audience.id}/replace`,
      replaceBody(1),
    );
    assert.equal(next.status, 202);
    assert.equal(next.body.revision, 2);
  });

  it('replays a retried replace, starting one operation and bumping the revision once', async () => {
    const a = await sb.newAccount();
    const audience = await audienceNamed(a, 'Past purchasers (180 days)');
    const path = `/custom_audiences/${audience.id}/replace`;
    const first = await call<OperationJson>(a, 'POST', path, replaceBody(0), 'replace-1');
    const retry = await call<OperationJson>(a, 'POST', path, replaceBody(0), 'replace-1');
    assert.equal(retry.status, 202);
    assert.deepEqual(retry.body, first.body);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal((await audienceNamed(a, 'Past purchasers (180 days)')).revision, 1);
    assert.equal((await sb.ledger(a.accountId, path)).length, 1);
    const reused = await call<ErrorJson>(a, 'POST', path, replaceBody(1), 'replace-1');
    assert.equal(reused.status, 422);
  });

  it('survives a lost answer: the retry with the same key replays the operation it started', async () => {
    const a = await sb.newAccount();
    const audience = await audienceNamed(a, 'Newsletter subscribers');
    const path = `/custom_audiences/${audience.id}/replace`;
    const fault = await sb.admin('POST', '/_sandbox/faults', {
      account_id: a.accountId,
      method: 'POST',
      path_prefix: path,
      kind: 'fail_after_commit',
      count: 1,
    });
    assert.equal(fault.status, 201);
    const lost = await call<ErrorJson>(a, 'POST', path, replaceBody(0), 'lost-1');
    assert.equal(lost.status, 500);
    const retry = await call<OperationJson>(a, 'POST', path, replaceBody(0), 'lost-1');
    assert.equal(retry.status, 202);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    const after = await audienceNamed(a, 'Newsletter subscribers');
    assert.equal(after.revision, 1);
    assert.equal(after.latest_operation?.id, retry.body.id);
  });

  it('refuses a bad body, naming the field', async () => {
    const a = await sb.newAccount();
    const audience = await audienceNamed(a, 'VIP customers');
    const good = replaceBody(0);
    const { file_id: _fileId, ...noFile } = good;
    const cases: [unknown, string][] = [
      [noFile, 'file_id'],
      [{ ...good, expected_revision: -1 }, 'expected_revision'],
      [{ ...good, file_size: 0 }, 'file_size'],
      [{ ...good, file_size: 500_000_001 }, 'file_size'],
      [{ ...good, identifier_type: 'name' }, 'identifier_type'],
      [{ ...good, identifier_resolution: 'manual' }, 'identifier_resolution'],
      [{ ...good, filename: '' }, 'filename'],
      [{ ...good, mimetype: 'csv' }, 'mimetype'],
      [{ ...good, members: ['someone@example.com'] }, 'members'],
    ];
    for (const [body, field] of cases) {
      const res = await call<ErrorJson>(a, 'POST', `/custom_audiences/${audience.id}/replace`, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.field, field, JSON.stringify(body));
    }
    const missing = await call<ErrorJson>(a, 'POST', '/custom_audiences/ca_0000000000000000/replace', good);
    assert.equal(missing.status, 404);
    assert.equal((await audienceNamed(a, 'VIP customers')).revision, 0);
  });
});

describe('POST /custom_audiences/merge', () => {
  it('creates an independent audience whose count appears when the merge completes', async () => {
    const a = await sb.newAccount();
    const sources = (await audiences(a)).slice(0, 2);
    const res = await call<{ custom_audience: AudienceJson; operation: OperationJson }>(
      a,
      'POST',
      '/custom_audiences/merge',
      { name: 'Subscribers and purchasers', custom_audience_ids: sources.map((s) => s.id) },
    );
    assert.equal(res.status, 201);
    const merged = res.body.custom_audience;
    assert.equal(merged.name, 'Subscribers and purchasers');
    assert.equal(merged.status, 'active');
    assert.equal(merged.matched_count_range, null);
    assert.deepEqual(merged.eligible_uses, []);
    assert.equal(res.body.operation.type, 'merge');
    assert.equal(res.body.operation.status, 'pending');
    assert.equal(res.body.operation.custom_audience_id, merged.id);

    const saved = clock;
    try {
      clock = saved + 30_000;
      const after = await audienceNamed(
        a,
        'Subscribers and purchasers',
        '?matched_count_granularity=granular',
      );
      // 48 213 + 70 % of 12 874, rounded to two significant figures.
      assert.equal(after.matched_count, 57_000);
      assert.deepEqual(after.eligible_uses, ['inclusion', 'exclusion', 'bid_multiplier']);
    } finally {
      clock = saved;
    }
    assert.equal((await audiences(a)).length, 6);
  });

  it('refuses unknown or archived sources and more than 64, naming the item', async () => {
    const a = await sb.newAccount();
    const list = await audiences(a);
    const active = list[0]?.id ?? '';
    const archived = list[4]?.id ?? '';
    const cases: [unknown, string][] = [
      [{ name: 'Merged', custom_audience_ids: [active, 'ca_0000000000000000'] }, 'custom_audience_ids.1'],
      [{ name: 'Merged', custom_audience_ids: [archived] }, 'custom_audience_ids.0'],
      [
        { name: 'Merged', custom_audience_ids: Array.from({ length: 65 }, (_, i) => `ca_${i}`) },
        'custom_audience_ids',
      ],
      [{ name: 'Merged', custom_audience_ids: [] }, 'custom_audience_ids'],
      [{ name: 'ab', custom_audience_ids: [active] }, 'name'],
      [{ custom_audience_ids: [active] }, 'name'],
    ];
    for (const [body, field] of cases) {
      const res = await call<ErrorJson>(a, 'POST', '/custom_audiences/merge', body);
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 100));
      assert.equal(res.body.error.field, field, JSON.stringify(body).slice(0, 100));
    }
    assert.equal((await audiences(a)).length, 5);
  });
});

describe('POST /custom_audiences/{id}/archive', () => {
  it('archives once, bumping the revision, after which the audience cannot be replaced', async () => {
    const a = await sb.newAccount();
    const audience = await audienceNamed(a, 'Cart abandoners');
    const path = `/custom_audiences/${audience.id}/archive`;
    const res = await call<AudienceJson>(a, 'POST', path);
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'archived');
    assert.equal(res.body.revision, 1);
    assert.deepEqual(res.body.eligible_uses, []);
    const again = await call<AudienceJson>(a, 'POST', path, {});
    assert.equal(again.status, 200);
    assert.equal(again.body.revision, 1);
    const replace = await call<ErrorJson>(
      a,
      'POST',
      `/custom_audiences/${audience.id}/replace`,
      replaceBody(1),
    );
    assert.equal(replace.status, 409);
    assert.equal(replace.body.error.code, 'audience_archived');
    const body = await call<ErrorJson>(a, 'POST', path, { reason: 'old' });
    assert.equal(body.status, 400);
  });

  it('answers 404 for another account’s audience and leaves it alone', async () => {
    const a = await sb.newAccount();
    const b = await sb.newAccount();
    const theirs = await audienceNamed(b, 'Cart abandoners');
    const res = await call<ErrorJson>(a, 'POST', `/custom_audiences/${theirs.id}/archive`);
    assert.equal(res.status, 404);
    assert.equal((await audienceNamed(b, 'Cart abandoners')).status, 'active');
  });
});

describe('GET /custom_audiences/{id}/operations/{operation_id}', () => {
  it('answers 404 for an operation of another audience or account', async () => {
    const a = await sb.newAccount();
    const b = await sb.newAccount();
    const [first, second] = await audiences(a);
    const op = await call<OperationJson>(a, 'POST', `/custom_audiences/${first?.id}/replace`, replaceBody(0));
    const ok = await call<OperationJson>(a, 'GET', `/custom_audiences/${first?.id}/operations/${op.body.id}`);
    assert.equal(ok.status, 200);
    const wrongAudience = await call<ErrorJson>(
      a,
      'GET',
      `/custom_audiences/${second?.id}/operations/${op.body.id}`,
    );
    assert.equal(wrongAudience.status, 404);
    const otherAccount = await call<ErrorJson>(
      b,
      'GET',
      `/custom_audiences/${first?.id}/operations/${op.body.id}`,
    );
    assert.equal(otherAccount.status, 404);
  });
});
