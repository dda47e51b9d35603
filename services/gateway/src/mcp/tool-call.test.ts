/**
 * How a tool call answers a service's refusal, proved on the whole stack through the official MCP
 * client: a refusal that carries its own code (adsmcp-refusal-code) is the tool error with that
 * code, whatever route the tool has.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { createPrincipalSigner } from '@adsmcp/runtime/principal';
import { createServiceClient } from '@adsmcp/runtime/service-client';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { as } from '@adsmcp/testkit/service-harness';
import { toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let agent: McpTestClient;
const { refused } = toolCalls(() => agent);

/** A UTC date `days` before today: in the past in every account's time zone when days >= 2. */
const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);

before(async () => {
  e2e = await startSeededStack();
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

/**
 * Connects to the seeded workspace a new sandbox account that has more than 100 ad groups (the
 * most a report covers) and returns its account id.
 */
async function accountWithManyAdGroups(): Promise<string> {
  const sandbox = e2e.stack.urls['ads-sandbox'];
  const res = await fetch(`${sandbox}/_sandbox/accounts`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${e2e.stack.secrets.sandboxAdminToken}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      name: 'Large account',
      currency: 'USD',
      time_zone: 'America/New_York',
      bulk_access: true,
    }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const created = (await res.json()) as { account_id: string; credential: string };
  const platform = { authorization: `Bearer ${created.credential}`, 'content-type': 'application/json' };
  const campaigns = (await (await fetch(`${sandbox}/campaigns?limit=1`, { headers: platform })).json()) as {
    data: { id: string }[];
  };
  const operations = Array.from({ length: 100 }, (_, i) => ({
    type: 'create_ad_group',
    body: {
      campaign_id: campaigns.data[0]?.id,
      name: `Group ${i}`,
      status: 'paused',
      bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid', max_bid_micros: 900_000 },
    },
  }));
  const job = await fetch(`${sandbox}/bulk_mutation_jobs`, {
    method: 'POST',
    headers: platform,
    body: JSON.stringify({ operations }),
  });
  assert.ok(job.ok, await job.clone().text());
  const upstream = createServiceClient(
    UpstreamService,
    e2e.stack.urls['upstream-proxy'].split(',')[0] as string,
    'upstream-proxy',
    await createPrincipalSigner(e2e.stack.secrets.principalPrivateKey),
  );
  const { account } = await upstream.createConnection(
    {
      name: 'Large account',
      currency: 'USD',
      timeZone: 'America/New_York',
      canWrite: true,
      upstreamAccountId: created.account_id,
      upstreamCredential: created.credential,
    },
    as({
      workspaceId: e2e.seed.workspaceId,
      credentialId: e2e.seed.credentialId,
      userId: crypto.randomUUID(),
      role: 'admin',
      scopes: ['read', 'write'],
      via: 'operator',
    }),
  );
  return account?.accountId as string;
}

test('a refusal carrying its own code is the tool error with that code and the service’s words', async () => {
  const accountId = await accountWithManyAdGroups();
  const error = await refused('ads_create_performance_report', {
    account_id: accountId,
    name: 'Everything',
    since: daysAgo(9),
    until: daysAgo(3),
  });
  assert.deepEqual(error, {
    code: 'report_too_large',
    message:
      'the account has more than 100 ad groups; a report covers at most 100: give a campaign_id with fewer',
  });
  const reports = await agent.callTool('ads_list_performance_reports', {});
  assert.equal((reports.structuredContent as { total: number }).total, 0, 'nothing was saved');
});
