/**
 * The dashboard's changes list stops where the tools do: a page starting past the changes
 * service's offset bound (100,000) answers 400 with a message naming `page` and the last page,
 * rather than asking the service to skip that many changes (or failing with a 500). The whole
 * stack, signed in over HTTP as a browser would.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import pg from 'pg';

let e2e: SeededStack;
let cookie: string;

before(async () => {
  e2e = await startSeededStack();
  const { gatewayUrl } = e2e.stack;
  const { dashboardUser, dashboardPassword } = e2e.seed;
  assert.ok(dashboardPassword, 'the demo has a dashboard password');
  const login = await fetch(`${gatewayUrl}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: new URL(gatewayUrl).origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email: dashboardUser, password: dashboardPassword }).toString(),
  });
  const set = login.headers.get('set-cookie')?.split(';')[0];
  assert.ok(set, `signing in answered ${login.status} with a session`);
  cookie = set;
  // More changes than the bound reaches, written as the store keeps them (the tools would take minutes).
  const sql = new pg.Client({ connectionString: e2e.db.url });
  await sql.connect();
  try {
    await sql.query(
      `INSERT INTO changes.changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json,
                                    digest, target_path, target_before_json, prepared_by, prepared_at, rejected_by,
                                    rejected_at, reject_reason)
       SELECT gen_random_uuid(), $1, $2, 'ads_update_ad', 'rejected', 'Old change ' || i, 'POST', '/v1/ads/' || i, '{}',
              repeat('a', 64), '/v1/ads/' || i, '{}', 'agent', now() - i * interval '1 minute', 'user:x via dashboard',
              now() - i * interval '1 minute', 'Not now'
         FROM generate_series(1, 100100) AS i`,
      [e2e.seed.workspaceId, e2e.seed.accounts[0]?.account_id],
    );
  } finally {
    await sql.end();
  }
});

after(async () => {
  await e2e?.stop();
});

const view = async (query: string) => {
  const res = await fetch(`${e2e.stack.gatewayUrl}/dashboard/changes${query}`, { headers: { cookie } });
  return { status: res.status, text: await res.text() };
};

test('the changes page at the offset bound is listed without a link further, and a page past it is refused naming page and the last page', async () => {
  const last = await view('?page=4001');
  assert.equal(last.status, 200);
  assert.match(last.text, /Page 4001 of \d+ \(100\d{3} in all\)/);
  assert.match(last.text, /Old change 1000\d\d/, 'the page lists the changes at offset 100,000');
  assert.doesNotMatch(last.text, /rel="next"/, 'no link to a page that would be refused');
  assert.match((await view('?page=4000')).text, /rel="next"/);
  for (const query of ['?page=4002', '?status=applied&page=999999']) {
    const past = await view(query);
    assert.equal(past.status, 400, `${query} is refused`);
    assert.match(past.text, /page must be at most 4001/);
  }
});
