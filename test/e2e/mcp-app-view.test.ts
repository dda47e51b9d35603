/**
 * The MCP Apps view of a prepared change, in Chromium: a minimal host page (served here on
 * 127.0.0.1) loads `ui://adsmcp/change-review` in a sandboxed iframe and speaks the ext-apps host
 * protocol to it with ext-apps' own AppBridge, handing it the result of a real prepare made with
 * the official MCP client and forwarding its resource reads to the server. The view shows the
 * summary, the before/after, the request and digest with a platform's hidden characters shown
 * as the dashboard shows them, and its one button makes the host receive an open-link request
 * for the dashboard's review page; the change stays prepared.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { build } from 'esbuild';
import pg from 'pg';
import type { Browser } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let client: Client;
let browser: Browser;
let host: Server;
let hostUrl: string;

/** The host page's script: ext-apps' AppBridge and PostMessageTransport, bundled for the browser. */
const HOST_SCRIPT = `
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
window.showView = async (html, toolResult) => {
  const iframe = document.createElement('iframe');
  iframe.id = 'view';
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.cssText = 'width:100%;height:900px;border:0';
  document.body.append(iframe);
  const bridge = new AppBridge(null, { name: 'test host', version: '1.0.0' }, { openLinks: {}, serverResources: {} });
  bridge.onreadresource = async ({ uri }) => window.hostReadResource(uri);
  bridge.onopenlink = async ({ url }) => { await window.hostOpenLink(url); return {}; };
  bridge.oninitialized = () => { bridge.sendToolResult(toolResult); };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
};
`;

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  client = new Client(
    { name: 'e2e-apps-host', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.mcpUrl), {
      authProvider: { token: async () => seed.token },
    }),
  );
  const bundle = await build({
    stdin: { contents: HOST_SCRIPT, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
  });
  const hostJs = bundle.outputFiles[0]?.text ?? '';
  host = createServer((req, res) => {
    if (req.url === '/host.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(hostJs);
    else
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          '<!doctype html><html><body><h1>Test host</h1><script type="module" src="/host.js"></script></body></html>',
        );
  });
  await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
  hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}/`;
  browser = await launchBrowser();
});

after(async () => {
  await client?.close();
  await browser?.close();
  await e2e?.stop();
  await new Promise((resolve) => host?.close(resolve));
});

describe('the MCP Apps view of a prepared change', () => {
  test('prepare tools link the view, and clients without MCP Apps get the same structured result', async () => {
    const { tools } = await client.listTools();
    const update = tools.find((t) => t.name === 'ads_update_ad');
    assert.deepEqual(update?._meta, { ui: { resourceUri: 'ui://adsmcp/change-review' } });
    const read = tools.find((t) => t.name === 'ads_list_ads');
    assert.equal(read?._meta, undefined, 'a read tool links no view');
    const view = await client.readResource({ uri: 'ui://adsmcp/change-review' });
    assert.equal(view.contents[0]?.mimeType, 'text/html;profile=mcp-app');
  });

  test('renders the change in a host page and its button asks the host to open the review page', async () => {
    const account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
    const listed = await client.callTool({
      name: 'ads_list_ads',
      arguments: { account_id: account.account_id, limit: 5 },
    });
    const ad = (listed.structuredContent as { ads: { id: string; status: string }[] }).ads.find(
      (a) => a.status !== 'archived',
    );
    assert.ok(ad);
    // The platform's own name carries a right-to-left override and a zero-width space.
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    try {
      await db.query(
        'UPDATE ads_sandbox.ads SET name = $1, revision = revision + 1, updated_at = now() WHERE id = $2 AND account_id = $3',
        ['Sale \u202Edesuap\u202C tonight\u200B', ad.id, account.upstream_account_id],
      );
    } finally {
      await db.end();
    }
    const result = await client.callTool({
      name: 'ads_update_ad',
      arguments: {
        account_id: account.account_id,
        ad_id: ad.id,
        body: { name: 'Spring sale from the view' },
      },
    });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const change = result.structuredContent as {
      change_id: string;
      summary: string;
      digest: string;
      review_url: string;
    };
    const { html } = {
      html: (await client.readResource({ uri: 'ui://adsmcp/change-review' })).contents[0] as { text: string },
    };

    const page = await browser.newPage();
    const opened: string[] = [];
    await page.exposeFunction('hostReadResource', (uri: string) => client.readResource({ uri }));
    await page.exposeFunction('hostOpenLink', (url: string) => {
      opened.push(url);
    });
    try {
      await page.goto(hostUrl);
      await page.waitForFunction(() => typeof (globalThis as { showView?: unknown }).showView === 'function');
      await page.evaluate(
        ([h, r]) =>
          (globalThis as unknown as { showView: (h: string, r: unknown) => Promise<void> }).showView(h, r),
        [html.text, result] as const,
      );
      const view = page.frameLocator('#view');
      await view.locator('#review').getByText(change.digest).first().waitFor({ timeout: 20_000 });
      const text = (await view.locator('#review').textContent()) ?? '';
      assert.ok(text.includes(change.digest), 'the digest is shown');
      assert.ok(text.includes('Spring sale from the view'), 'the after value is shown');
      assert.ok(
        text.includes('Sale ⟨U+202E⟩desuap⟨U+202C⟩ tonight⟨U+200B⟩'),
        `hidden characters shown as tokens: ${text}`,
      );
      assert.ok(!text.includes('\u202E'), 'no hidden character acts unseen');
      assert.ok(text.includes(`/ads/${ad.id}`), 'the exact request is shown');
      assert.equal(await view.locator('form, #approve').count(), 0, 'the view offers no way to approve');

      await view.locator('#open-review').click();
      for (let i = 0; i < 50 && opened.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(opened, [change.review_url], 'the host was asked to open the review page');
      const after = await client.callTool({
        name: 'ads_get_change',
        arguments: { change_id: change.change_id },
      });
      assert.equal(
        (after.structuredContent as { status: string }).status,
        'prepared',
        'nothing was approved',
      );
    } finally {
      await page.close();
    }
  });
});
