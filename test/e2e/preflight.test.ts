/**
 * Checking before preparing, through the official client and the real processes: a creative is
 * checked by the rules the prepare tools apply, its missing image reported apart from its copy, and
 * a change is planned exactly as its prepare tool would plan it, with nothing recorded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { toolCalls } from '@adsmcp/testkit/tool-calls';

interface Ad {
  id: string;
  name: string;
  status: string;
  creative: { type: string; image_crop?: unknown };
}
interface Preflight {
  would_prepare: boolean;
  operation: string;
  verified: boolean;
  issues: { path: string; message: string }[];
  refusal: { code: string; message: string } | null;
  change: {
    summary: string;
    digest: string;
    operation: { method: string; path: string; body_json: string };
  } | null;
}

let e2e: SeededStack;
let agent: McpTestClient;
let accountId: string;
let ads: Ad[];
const { ok, refused } = toolCalls(() => agent);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
  const usd = e2e.seed.accounts.find((a) => a.currency === 'USD');
  assert.ok(usd, 'the seed has a USD account');
  accountId = usd.account_id;
  const list = await ok<{ ads: Ad[] }>('ads_list_ads', { account_id: accountId, limit: 50 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 2, 'the seeded account has ads');
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

const changesTotal = async () => (await ok<{ total: number }>('ads_list_changes', {})).total;

describe('ads_validate_creative', () => {
  const creative = {
    type: 'chat_card',
    title: 'Two plants for one',
    body: 'Every plant, this week only.',
    target_url: 'https://shop.example.com/spring',
    file_id: 'file_0123456789abcdef',
  };

  test('a chat card with an image and good copy is valid', async () => {
    const r = await ok<Record<string, unknown>>('ads_validate_creative', { account_id: accountId, creative });
    assert.deepEqual(r, {
      valid: true,
      copy_issues: [],
      image: { required: true, present: true, issue: '' },
    });
  });

  test('a missing image is reported in the result, apart from bad copy, which is refused by field', async () => {
    const { file_id: _, ...noImage } = creative;
    const r = await ok<Record<string, unknown>>('ads_validate_creative', {
      account_id: accountId,
      creative: noImage,
    });
    assert.deepEqual(r, {
      valid: false,
      copy_issues: [],
      image: {
        required: true,
        present: false,
        issue: '`creative.file_id` is required: a chat_card shows an image, and it has none',
      },
    });
    const template = await ok<Record<string, unknown>>('ads_validate_creative', {
      account_id: accountId,
      creative: { ...noImage, type: 'product_ad_template' },
    });
    assert.equal(template.valid, true);
    const badCopy = await refused('ads_validate_creative', {
      account_id: accountId,
      creative: { ...noImage, title: 'x'.repeat(51), target_url: 'javascript:alert(1)' },
    });
    assert.equal(badCopy.code, 'invalid_argument');
    const paths = (badCopy as unknown as { issues: { path: string }[] }).issues.map((i) => i.path);
    assert.deepEqual(paths.sort(), ['creative.target_url', 'creative.title']);
  });
});

describe('ads_preflight_change', () => {
  const preflight = (args: Record<string, unknown>, current?: Record<string, unknown>) =>
    ok<Preflight>('ads_preflight_change', {
      account_id: accountId,
      operation: 'ads_update_ad',
      args: { account_id: accountId, ...args },
      ...(current === undefined ? {} : { current }),
    });

  test('a change that would be prepared shows the summary and digest ads_update_ad then records', async () => {
    const ad = ads[0] as Ad;
    const args = { ad_id: ad.id, body: { name: 'Preflight — checked name' } };
    const before = await changesTotal();
    const r = await preflight(args);
    assert.equal(r.would_prepare, true);
    assert.equal(r.verified, true);
    assert.equal(r.refusal, null);
    assert.equal(await changesTotal(), before, 'a preflight records nothing');
    assert.ok(!('change_id' in (r.change ?? {})));
    const prepared = await ok<{ summary: string; digest: string }>('ads_update_ad', {
      account_id: accountId,
      ...args,
    });
    assert.equal(r.change?.summary, prepared.summary);
    assert.equal(r.change?.digest, prepared.digest);
  });

  test('a change prepare would refuse is refused with the message prepare gives, recording nothing', async () => {
    const cropped = ads.find((a) => a.creative?.type === 'chat_card' && a.creative.image_crop);
    assert.ok(cropped, 'the seed has a chat card with a crop');
    const before = await changesTotal();
    for (const body of [{ name: cropped.name }, { creative: { type: 'product_ad_template' } }]) {
      const args = { ad_id: cropped.id, body };
      const r = await preflight(args);
      assert.equal(r.would_prepare, false);
      assert.equal(r.change, null);
      const prepared = await refused('ads_update_ad', { account_id: accountId, ...args });
      assert.deepEqual(r.refusal, { code: prepared.code, message: prepared.message });
    }
    assert.equal(await changesTotal(), before);
  });

  test('an update whose only field is an empty object is refused naming that field', async () => {
    const ad = ads[0] as Ad;
    const r = await preflight({ ad_id: ad.id, body: { creative: {} } });
    assert.equal(r.would_prepare, false);
    assert.deepEqual(r.refusal, {
      code: 'invalid_argument',
      message: '`body.creative` is empty: name at least one of its fields to change, or leave it out',
    });
    const { ad_groups: groups } = await ok<{ ad_groups: { id: string; status: string }[] }>(
      'ads_list_ad_groups',
      { account_id: accountId, limit: 50 },
    );
    const group = groups.find((g) => g.status !== 'archived');
    assert.ok(group, 'the seeded account has an ad group');
    const err = await refused('ads_update_ad_group', {
      account_id: accountId,
      ad_group_id: group.id,
      body: { bidding_config: {} },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.equal(
      err.message,
      '`body.bidding_config` is empty: name at least one of its fields to change, or leave it out',
    );
  });

  test('args that break the prepare tool input rules are reported with their paths', async () => {
    const r = await preflight({ ad_id: 'ad 1', body: { creative: { title: '' }, colour: 'red' } });
    assert.equal(r.would_prepare, false);
    assert.equal(r.refusal?.code, 'invalid_argument');
    assert.deepEqual(r.issues.map((i) => i.path).sort(), ['ad_id', 'body.colour', 'body.creative.title']);
  });

  test('with current, the change is planned against it and marked unverified', async () => {
    const ad = ads[1] as Ad;
    const current = { ...ad, name: 'What I believe it is called' };
    const r = await preflight({ ad_id: ad.id, body: { name: ad.name } }, current);
    assert.equal(r.would_prepare, true);
    assert.equal(r.verified, false);
    assert.match(r.change?.summary ?? '', /name "What I believe it is called" →/);
  });

  test('args for another account than account_id are refused, naming both fields', async () => {
    const other = e2e.seed.accounts.find((a) => a.account_id !== accountId);
    assert.ok(other, 'the seed has a second account');
    const err = await refused('ads_preflight_change', {
      account_id: accountId,
      operation: 'ads_archive_ad',
      args: { account_id: other.account_id, ad_id: (ads[0] as Ad).id },
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /`args.account_id` must be `account_id`/);
    // The same account written in capitals is the same account.
    const ad = ads[0] as Ad;
    const same = await preflight({
      account_id: accountId.toUpperCase(),
      ad_id: ad.id,
      body: { name: 'Preflight — one account, any case' },
    });
    assert.equal(same.would_prepare, true, JSON.stringify(same));
  });

  test('an operation that is not a prepare tool is refused, naming the prepare tools', async () => {
    for (const operation of ['ads_launch_rocket', 'ads_get_ad']) {
      const err = await refused('ads_preflight_change', {
        account_id: accountId,
        operation,
        args: {},
      });
      assert.equal(err.code, 'invalid_argument');
      assert.match(err.message, /operation must be the name of a prepare tool: one of .*ads_update_ad/);
    }
  });

  test('a read-scope connection gets the plan (a preflight is a read) with the permission refusal prepare would give', async () => {
    const issued = JSON.parse(
      await e2e.stack.admin(['create-token', '--workspace', e2e.seed.workspaceId, '--scopes', 'read']),
    ) as { token: string };
    const reader = await connectClient('v1', e2e.stack.mcpUrl, issued.token);
    try {
      const ad = ads[0] as Ad;
      const args = { account_id: accountId, ad_id: ad.id, body: { name: 'Planned by a reader' } };
      const res = await reader.callTool('ads_preflight_change', {
        account_id: accountId,
        operation: 'ads_update_ad',
        args,
      });
      assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
      const r = res.structuredContent as unknown as Preflight;
      assert.equal(r.would_prepare, false, 'this connection could not prepare it');
      assert.deepEqual(r.refusal, {
        code: 'permission_denied',
        message:
          'preparing a change needs the write scope and the admin or editor role; this caller has role admin and scopes [read]',
      });
      assert.match(r.change?.summary ?? '', /Planned by a reader/, 'the plan is shown all the same');
      const asWriter = await preflight({ ad_id: ad.id, body: { name: 'Planned by a reader' } });
      assert.equal(r.change?.digest, asWriter.change?.digest, 'the same plan a writer gets');
      await assert.rejects(reader.callTool('ads_update_ad', args), /403|forbidden/i);
    } finally {
      await reader.close();
    }
  });
});
