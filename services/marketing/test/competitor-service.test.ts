/**
 * Competitor watch in the marketing service: the CompetitorService over a real database, with its
 * checks reaching a local HTTPS site through the safe fetcher (a test resolver, the site's CA and
 * 127.0.0.1 let through); the scheduled checks through the real Postgres bus.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CompetitorObservation,
  CompetitorService,
  type CompetitorSource,
  type SaveCompetitorSourceRequestSchema,
} from '@adsmcp/proto/marketing/v1/competitors_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { createPgTransport } from '@adsmcp/runtime/bus/pg-transport';
import { buildConnectServer } from '@adsmcp/runtime/connect-server';
import { inTransaction, type PoolClient } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import type { Principal } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { type HttpsSite, startHttpsSite } from '@adsmcp/testkit/https-site';
import {
  assertRefused,
  type ServiceUnderTest,
  startServiceUnderTest,
  testPrincipal,
} from '@adsmcp/testkit/service-harness';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import { createCompetitorHandlers } from '../src/handlers/competitor-handlers.ts';
import { MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { createCompetitorChecker } from '../src/work/competitor-checks.ts';
import {
  COMPETITOR_CHECK_TOPIC,
  enqueueDueChecks,
  startCompetitorWatch,
} from '../src/work/competitor-schedule.ts';

let svc: ServiceUnderTest<typeof CompetitorService>;
let site: HttpsSite;
/** What the site serves, by path; each request is recorded with the time it arrived. */
const pages: Record<string, (res: ServerResponse) => void> = {};
const requests: { path: string; at: number }[] = [];

const html = (title: string, body: string) => (res: ServerResponse) =>
  res
    .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    .end(
      `<!doctype html><html><head><title>${title}</title><style>.x{}</style></head><body>${body}</body></html>`,
    );

before(async () => {
  site = await startHttpsSite(
    (req, res) => {
      requests.push({ path: req.url ?? '/', at: Date.now() });
      const page = pages[req.url ?? '/'];
      if (page) page(res);
      else res.writeHead(404).end('not here');
    },
    ['shop.test', 'rival.test'],
  );
  svc = await startServiceUnderTest({
    service: CompetitorService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    prepare: (pool) => migrateBus(pool, SERVICE_NAME),
    build: (deps) =>
      buildConnectServer({
        serviceName: SERVICE_NAME,
        verifier: deps.verifier,
        logger: deps.logger,
        routes: (router) =>
          router.service(
            CompetitorService,
            createCompetitorHandlers({
              pool: deps.pool,
              // Due at once when enabled, so the schedule tests need not wait.
              random: () => 0,
              checker: createCompetitorChecker({
                pool: deps.pool,
                fetchPage: createSafeFetcher(site.fetcherOptions()),
                hostSpacingMs: 0,
              }),
            }),
          ),
      }),
  });
});

after(async () => {
  await svc?.stop();
  await site?.close();
});

type SaveRequest = MessageInitShape<typeof SaveCompetitorSourceRequestSchema>;

/** A distinct path per source, so that tests do not see each other's pages. */
function newPath(): string {
  return `/p/${randomUUID()}`;
}

/** What a test varies in a save. */
interface SavePatch {
  accountId?: string;
  name?: string;
  url?: string;
  intervalHours?: number;
  enabled?: boolean;
  literals?: string[];
}

function saveRequest(patch: SavePatch = {}): SaveRequest {
  return {
    accountId: randomUUID(),
    name: 'Rival offers',
    url: `${site.origin('shop.test')}${newPath()}`,
    intervalHours: 24,
    enabled: true,
    ...patch,
  };
}

async function save(who: Principal, req: SaveRequest): Promise<CompetitorSource> {
  const { source } = await svc.client.saveCompetitorSource(req, svc.as(who));
  assert.ok(source);
  return source;
}

async function check(who: Principal, sourceId: string): Promise<CompetitorObservation> {
  const { observation } = await svc.client.checkCompetitorSource({ sourceId }, svc.as(who));
  assert.ok(observation);
  return observation;
}

const pathOf = (source: CompetitorSource) => new URL(source.url).pathname;

describe('saving, listing and pausing sources', () => {
  test('a new enabled source starts at revision 1, scheduled, created by the caller, and is listed', async () => {
    const editor = testPrincipal({ role: 'editor' });
    const req = saveRequest({ literals: ['free shipping'] });
    const { source, created } = await svc.client.saveCompetitorSource(req, svc.as(editor));
    assert.equal(created, true);
    assert.ok(source);
    assert.equal(source.revision, 1);
    assert.equal(source.scheduleState, 'scheduled');
    assert.ok(source.nextCheckAt, 'a next check is due');
    assert.equal(source.pausedAt, undefined);
    assert.equal(source.createdBy, editor.userId);
    assert.deepEqual(source.literals, ['free shipping']);
    assert.equal(source.lastCheck, undefined);
    const list = await svc.client.listCompetitorSources({}, svc.as(editor));
    assert.equal(list.total, 1);
    assert.equal(list.sources[0]?.sourceId, source.sourceId);
  });

  test('a source saved disabled is paused, with no next check', async () => {
    const source = await save(testPrincipal(), saveRequest({ enabled: false }));
    assert.equal(source.scheduleState, 'paused');
    assert.equal(source.nextCheckAt, undefined);
    assert.ok(source.pausedAt);
  });

  test('an update needs the current revision; a stale one is refused with the current revision', async () => {
    const admin = testPrincipal();
    const first = await save(admin, saveRequest());
    const updated = await save(admin, {
      ...saveRequest({ accountId: first.accountId, url: first.url }),
      sourceId: first.sourceId,
      expectedRevision: 1,
      name: 'Renamed',
    });
    assert.equal(updated.revision, 2);
    assert.equal(updated.name, 'Renamed');
    await assertRefused(
      svc.client.saveCompetitorSource(
        { ...saveRequest({ accountId: first.accountId }), sourceId: first.sourceId, expectedRevision: 1 },
        svc.as(admin),
      ),
      Code.Aborted,
      /expected_revision is stale: the source is at revision 2/,
    );
    await assertRefused(
      svc.client.saveCompetitorSource({ ...saveRequest(), sourceId: first.sourceId }, svc.as(admin)),
      Code.InvalidArgument,
      /expected_revision is required when updating/,
    );
    await assertRefused(
      svc.client.saveCompetitorSource(
        { ...saveRequest(), sourceId: first.sourceId, expectedRevision: 2 },
        svc.as(admin),
      ),
      Code.InvalidArgument,
      /account_id cannot change/,
    );
  });

  test('an account id typed in upper case is the same account: created and updated so', async () => {
    const admin = testPrincipal();
    const account = randomUUID();
    const first = await save(admin, saveRequest({ accountId: account.toUpperCase() }));
    assert.equal(first.accountId, account);
    const updated = await save(admin, {
      ...saveRequest({ accountId: account.toUpperCase(), url: first.url }),
      sourceId: first.sourceId,
      expectedRevision: 1,
      name: 'Renamed in upper case',
    });
    assert.equal(updated.revision, 2);
  });

  test('literals without visible text or repeated, and URLs with credentials, are refused, naming the field', async () => {
    const admin = testPrincipal();
    await assertRefused(
      svc.client.saveCompetitorSource(saveRequest({ literals: ['ok', '   '] }), svc.as(admin)),
      Code.InvalidArgument,
      /^literals\[1\] must contain visible text/,
    );
    await assertRefused(
      svc.client.saveCompetitorSource(
        saveRequest({ literals: ['Free shipping', '20% off', 'free  SHIPPING'] }),
        svc.as(admin),
      ),
      Code.InvalidArgument,
      /^literals\[2\] repeats literals\[0\]: phrases are found ignoring case and spacing/,
    );
    await assertRefused(
      svc.client.saveCompetitorSource(saveRequest({ url: 'https://user:pw@shop.test/' }), svc.as(admin)),
      Code.InvalidArgument,
      /^url must not contain a user name or password/,
    );
  });

  test('lists page newest first, filter by account, and never show another workspace’s sources', async () => {
    const admin = testPrincipal();
    const accountId = randomUUID();
    const saved: string[] = [];
    for (let i = 0; i < 3; i++)
      saved.push((await save(admin, saveRequest({ accountId, name: `S${i}` }))).sourceId);
    await save(admin, saveRequest());
    const page1 = await svc.client.listCompetitorSources({ accountId, limit: 2 }, svc.as(admin));
    assert.equal(page1.total, 3);
    assert.deepEqual(
      page1.sources.map((s) => s.sourceId),
      [saved[2], saved[1]],
    );
    assert.equal(page1.nextOffset, 2);
    const page2 = await svc.client.listCompetitorSources({ accountId, limit: 2, offset: 2 }, svc.as(admin));
    assert.deepEqual(
      page2.sources.map((s) => s.sourceId),
      [saved[0]],
    );
    assert.equal(page2.nextOffset, undefined);
    const stranger = testPrincipal();
    assert.equal((await svc.client.listCompetitorSources({}, svc.as(stranger))).total, 0);
    await assertRefused(check(stranger, saved[0] as string), Code.NotFound, /no competitor source/);
  });

  test('the creator may pause a source, and pausing again changes nothing', async () => {
    const creator = testPrincipal({ role: 'editor' });
    const source = await save(creator, saveRequest());
    const { source: paused } = await svc.client.pauseCompetitorSource(
      { sourceId: source.sourceId },
      svc.as(creator),
    );
    assert.equal(paused?.scheduleState, 'paused');
    assert.equal(paused?.nextCheckAt, undefined);
    assert.equal(paused?.revision, 2);
    const { source: again } = await svc.client.pauseCompetitorSource(
      { sourceId: source.sourceId },
      svc.as(creator),
    );
    assert.equal(again?.revision, 2);
  });

  test('another editor may not pause a source; a workspace admin may', async () => {
    const creator = testPrincipal({ role: 'editor' });
    const source = await save(creator, saveRequest());
    const colleague = { ...testPrincipal({ role: 'editor' }), workspaceId: creator.workspaceId };
    await assertRefused(
      svc.client.pauseCompetitorSource({ sourceId: source.sourceId }, svc.as(colleague)),
      Code.PermissionDenied,
      /only the member who created source .* or a workspace admin may pause it/,
    );
    const admin = { ...testPrincipal({ role: 'admin' }), workspaceId: creator.workspaceId };
    const { source: paused } = await svc.client.pauseCompetitorSource(
      { sourceId: source.sourceId },
      svc.as(admin),
    );
    assert.equal(paused?.scheduleState, 'paused');
  });

  test('another editor may not disable, re-point or otherwise save a source; its creator and an admin may', async () => {
    const creator = testPrincipal({ role: 'editor' });
    const source = await save(creator, saveRequest());
    const colleague = { ...testPrincipal({ role: 'editor' }), workspaceId: creator.workspaceId };
    const update = (patch: SavePatch, revision: number): SaveRequest => ({
      ...saveRequest({ accountId: source.accountId, url: source.url, ...patch }),
      sourceId: source.sourceId,
      expectedRevision: revision,
    });
    for (const patch of [
      { enabled: false },
      { url: `${site.origin('rival.test')}${newPath()}` },
      { name: 'Renamed' },
    ]) {
      await assertRefused(
        svc.client.saveCompetitorSource(update(patch, 1), svc.as(colleague)),
        Code.PermissionDenied,
        /only the member who created source .* or a workspace admin may change it/,
      );
    }
    const [unchanged] = (
      await svc.client.listCompetitorSources({ accountId: source.accountId }, svc.as(creator))
    ).sources;
    assert.equal(unchanged?.revision, 1);
    assert.equal(unchanged?.url, source.url);
    assert.equal(unchanged?.scheduleState, 'scheduled');

    const byCreator = await save(creator, update({ name: 'Renamed' }, 1));
    assert.equal(byCreator.name, 'Renamed');
    const admin = { ...testPrincipal({ role: 'admin' }), workspaceId: creator.workspaceId };
    const byAdmin = await save(admin, update({ enabled: false }, 2));
    assert.equal(byAdmin.scheduleState, 'paused');
    assert.equal(byAdmin.createdBy, creator.userId);
  });

  test('a viewer may list but not save, check or pause', async () => {
    const admin = testPrincipal();
    const source = await save(admin, saveRequest());
    const viewer = { ...testPrincipal({ role: 'viewer', scopes: ['read'] }), workspaceId: admin.workspaceId };
    assert.equal((await svc.client.listCompetitorSources({}, svc.as(viewer))).total, 1);
    await assertRefused(
      svc.client.saveCompetitorSource(saveRequest(), svc.as(viewer)),
      Code.PermissionDenied,
      /saving/,
    );
    await assertRefused(check(viewer, source.sourceId), Code.PermissionDenied, /checking/);
    await assertRefused(
      svc.client.pauseCompetitorSource({ sourceId: source.sourceId }, svc.as(viewer)),
      Code.PermissionDenied,
      /pausing/,
    );
  });
});

describe('checks by hand against a local HTTPS site', () => {
  test('the first check is the baseline; an unchanged page is unchanged; a changed one shows what changed', async () => {
    const admin = testPrincipal();
    const source = await save(admin, saveRequest());
    const path = pathOf(source);
    pages[path] = html(
      'Spring Sale',
      '<h1>Spring sale</h1><p>All plants 10% off.</p><script>var t = 1</script>',
    );
    const baseline = await check(admin, source.sourceId);
    assert.equal(baseline.outcome, 'baseline');
    assert.equal(baseline.httpStatus, 200);
    assert.equal(baseline.title, 'spring sale');
    assert.equal(baseline.trigger, 'manual');
    assert.match(baseline.summary, /^baseline taken/);

    // Markup, whitespace, case and scripts are not changes.
    pages[path] = html(
      'SPRING   sale',
      '<div><h1>Spring  SALE</h1></div><p>All plants 10% off.</p><script>var t = 2</script>',
    );
    const same = await check(admin, source.sourceId);
    assert.equal(same.outcome, 'unchanged', same.summary);
    assert.equal(same.summary, 'no change since the baseline');

    pages[path] = html('Summer Sale', '<h1>Spring sale</h1><p>All plants 25% off.</p>');
    const changed = await check(admin, source.sourceId);
    assert.equal(changed.outcome, 'changed');
    assert.equal(changed.titleChanged, true);
    assert.equal(changed.baselineTitle, 'spring sale');
    assert.equal(changed.title, 'summer sale');
    assert.equal(changed.bodyChanged, true);
    assert.equal(changed.bodyChangeCount, 1);
    assert.deepEqual(
      changed.bodyChanges.map((c) => ({ removed: c.removed, added: c.added })),
      [{ removed: '10', added: '25' }],
    );
    assert.match(changed.bodyChanges[0]?.context ?? '', /all plants$/);
    assert.equal(changed.summary, 'the title changed; the body text changed in 1 place since the baseline');

    const { observations, total } = await svc.client.getCompetitorObservations(
      { sourceId: source.sourceId },
      svc.as(admin),
    );
    assert.equal(total, 3);
    assert.deepEqual(
      observations.map((o) => o.outcome),
      ['changed', 'unchanged', 'baseline'],
    );
    const [listed] = (await svc.client.listCompetitorSources({ accountId: source.accountId }, svc.as(admin)))
      .sources;
    assert.equal(listed?.lastCheck?.outcome, 'changed');
    assert.equal(listed?.lastCheck?.observationId, changed.observationId);
    assert.ok(listed?.baselineAt);
  });

  test('with literals, a check records which phrases are present, absent, and which changed', async () => {
    const admin = testPrincipal();
    const source = await save(admin, saveRequest({ literals: ['Free Shipping', '20% off', 'gift card'] }));
    const path = pathOf(source);
    pages[path] = html('Offers', '<p>Free&nbsp;shipping on every order.</p><p>Now 20% off!</p>');
    const baseline = await check(admin, source.sourceId);
    assert.equal(baseline.outcome, 'baseline');
    assert.deepEqual(
      baseline.literals.map((l) => [l.phrase, l.present]),
      [
        ['Free Shipping', true],
        ['20% off', true],
        ['gift card', false],
      ],
    );
    assert.match(baseline.literals[0]?.excerpt ?? '', /free shipping on every order/);
    assert.equal(baseline.literals[2]?.excerpt, '');

    pages[path] = html('Offers', '<p>Free shipping on every order.</p><p>Buy a gift card.</p>');
    const changed = await check(admin, source.sourceId);
    assert.equal(changed.outcome, 'changed');
    assert.deepEqual(
      changed.literals.map((l) => ({
        phrase: l.phrase,
        present: l.present,
        was: l.wasPresent,
        changed: l.changed,
      })),
      [
        { phrase: 'Free Shipping', present: true, was: true, changed: false },
        { phrase: '20% off', present: false, was: true, changed: true },
        { phrase: 'gift card', present: true, was: false, changed: true },
      ],
    );
    assert.equal(
      changed.summary,
      '“20% off” is now absent; “gift card” is now present (against the baseline)',
    );
  });

  test('a paused source can still be checked by hand', async () => {
    const admin = testPrincipal();
    const source = await save(admin, saveRequest({ enabled: false }));
    pages[pathOf(source)] = html('Paused', '<p>hello</p>');
    assert.equal((await check(admin, source.sourceId)).outcome, 'baseline');
  });

  test('a new url starts a new baseline', async () => {
    const admin = testPrincipal();
    const source = await save(admin, saveRequest());
    pages[pathOf(source)] = html('One', '<p>one</p>');
    assert.equal((await check(admin, source.sourceId)).outcome, 'baseline');
    const moved = await save(admin, {
      ...saveRequest({ accountId: source.accountId }),
      sourceId: source.sourceId,
      expectedRevision: source.revision,
    });
    assert.equal(moved.baselineAt, undefined);
    pages[pathOf(moved)] = html('Two', '<p>two</p>');
    assert.equal((await check(admin, source.sourceId)).outcome, 'baseline');
  });

  test('an error status, a page that is not HTML and a page over 1 MiB are failed checks with the reason', async () => {
    const admin = testPrincipal();
    const missing = await save(admin, saveRequest());
    const notFound = await check(admin, missing.sourceId);
    assert.equal(notFound.outcome, 'failed');
    assert.equal(notFound.httpStatus, 404);
    assert.equal(notFound.reason, 'http_status');
    assert.equal(notFound.summary, 'failed: the page answered HTTP 404');

    const pdf = await save(admin, saveRequest());
    pages[pathOf(pdf)] = (res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4');
    const notHtml = await check(admin, pdf.sourceId);
    assert.equal(notHtml.outcome, 'failed');
    assert.equal(notHtml.reason, 'not_html');

    const huge = await save(admin, saveRequest());
    pages[pathOf(huge)] = (res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      for (let i = 0; i < 1100; i++) res.write('x'.repeat(1024));
      res.end();
    };
    const tooLarge = await check(admin, huge.sourceId);
    assert.equal(tooLarge.outcome, 'failed');
    assert.equal(tooLarge.reason, 'too_large');
    assert.equal(tooLarge.reasonMessage, 'response larger than 1048576 bytes');
  });

  test('with the product’s fetcher, a loopback source is refused before any connection, and the refusal is the evidence', async () => {
    const admin = testPrincipal();
    const source = await save(admin, saveRequest({ url: `https://127.0.0.1:${site.port}/` }));
    const connections = site.connections();
    const product = createCompetitorChecker({ pool: svc.pool, fetchPage: createSafeFetcher() });
    const { observation } = await product.checkNow(admin.workspaceId, source.sourceId, 'someone');
    assert.equal(observation.outcome, 'refused');
    assert.equal(observation.reason, 'address_refused');
    assert.equal(observation.reasonMessage, 'the host resolves to a loopback address (127.0.0.1)');
    assert.equal(observation.httpStatus, null);
    assert.equal(site.connections(), connections, 'nothing reached the site');
  });
});

describe('politeness and the schedule', () => {
  test('a check by hand of a host fetched moments ago is refused with the wait; other hosts are not held up', async () => {
    const admin = testPrincipal();
    const a = await save(admin, saveRequest());
    const b = await save(admin, saveRequest());
    const other = await save(admin, saveRequest({ url: `${site.origin('rival.test')}${newPath()}` }));
    for (const s of [a, b, other]) pages[pathOf(s)] = html('Page', '<p>text</p>');
    const polite = createCompetitorChecker({
      pool: svc.pool,
      fetchPage: createSafeFetcher(site.fetcherOptions()),
      hostSpacingMs: 60_000,
    });
    const before = requests.length;
    await polite.checkNow(admin.workspaceId, a.sourceId, 'u');
    await assert.rejects(polite.checkNow(admin.workspaceId, b.sourceId, 'u'), (err: unknown) => {
      assert.ok(err instanceof Error);
      assert.match(err.message, /^shop\.test was fetched less than 60 s ago: .* try again in \d+ s$/);
      return true;
    });
    await polite.checkNow(admin.workspaceId, other.sourceId, 'u');
    assert.equal(requests.length - before, 2, 'one fetch of shop.test, one of rival.test');
  });

  test('the scheduler enqueues each due enabled source once and moves its next check an interval on, with jitter', async () => {
    const admin = testPrincipal();
    const due = await save(admin, saveRequest({ intervalHours: 10 }));
    const paused = await save(admin, saveRequest({ enabled: false }));
    const now = new Date(Date.parse(due.nextCheckAt ?? '') + 1000);
    const enqueued = await enqueueDueChecks(svc.pool, { now, random: () => 0.5 });
    assert.ok(enqueued >= 1);
    const messages = await svc.pool.query<{ key: string; payload: { source_id: string } }>(
      'SELECT key, payload FROM bus_outbox WHERE topic = $1 AND key = ANY($2)',
      [COMPETITOR_CHECK_TOPIC, [due.sourceId, paused.sourceId]],
    );
    assert.deepEqual(
      messages.rows.map((m) => m.key),
      [due.sourceId],
    );
    const [listed] = (await svc.client.listCompetitorSources({ accountId: due.accountId }, svc.as(admin)))
      .sources;
    // 10 h, plus half of the jitter bound (a tenth of the interval, at most 15 minutes).
    assert.equal(listed?.nextCheckAt, new Date(now.getTime() + 10 * 3_600_000 + 7.5 * 60_000).toISOString());
    await enqueueDueChecks(svc.pool, { now, random: () => 0.5 });
    const again = await svc.pool.query('SELECT 1 FROM bus_outbox WHERE topic = $1 AND key = $2', [
      COMPETITOR_CHECK_TOPIC,
      due.sourceId,
    ]);
    assert.equal(again.rowCount, 1, 'not enqueued twice');
  });

  test('scheduled checks run on the bus, one host at a time with the spacing, and a source paused since it was enqueued is skipped', async () => {
    // Earlier tests' sources are due too: pause them so that only this test's run.
    await svc.pool.query(
      'UPDATE competitor_sources SET enabled = false, next_check_at = NULL, paused_at = now()',
    );
    // The politeness test held its hosts for a minute.
    await svc.pool.query('DELETE FROM competitor_host_slots');
    const admin = testPrincipal();
    const first = await save(admin, saveRequest());
    const second = await save(admin, saveRequest());
    const pausedLater = await save(admin, saveRequest());
    for (const s of [first, second, pausedLater]) pages[pathOf(s)] = html('Scheduled', '<p>text</p>');
    await enqueueDueChecks(svc.pool, { now: new Date(Date.now() + 1000), random: () => 0 });
    await svc.client.pauseCompetitorSource({ sourceId: pausedLater.sourceId }, svc.as(admin));

    const spacingMs = 1500;
    const logger = createLogger('marketing', 'silent');
    const bus = createPgTransport({ pool: svc.pool, logger });
    const watch = await startCompetitorWatch({
      pool: svc.pool,
      logger,
      bus,
      checker: createCompetitorChecker({
        pool: svc.pool,
        fetchPage: createSafeFetcher(site.fetcherOptions()),
        hostSpacingMs: spacingMs,
      }),
      everyMs: 100,
    });
    let observed: CompetitorObservation[][] = [];
    try {
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        observed = await Promise.all(
          [first, second].map(
            async (s) =>
              (await svc.client.getCompetitorObservations({ sourceId: s.sourceId }, svc.as(admin)))
                .observations,
          ),
        );
        if (observed.every((o) => o.length > 0)) break;
        await sleep(100);
      }
      assert.deepEqual(
        observed.map((o) => o.map((x) => [x.trigger, x.outcome])),
        [[['scheduled', 'baseline']], [['scheduled', 'baseline']]],
      );
      const pending = async () =>
        (
          await svc.pool.query(
            "SELECT 1 FROM bus_outbox WHERE topic = $1 AND status IN ('pending', 'running')",
            [COMPETITOR_CHECK_TOPIC],
          )
        ).rowCount;
      while ((await pending()) !== 0 && Date.now() < deadline) await sleep(100);
      assert.equal(await pending(), 0);
    } finally {
      await watch.stop();
      await bus.stop();
    }
    const { total } = await svc.client.getCompetitorObservations(
      { sourceId: pausedLater.sourceId },
      svc.as(admin),
    );
    assert.equal(total, 0, 'the paused source was not checked');
    // Both pages were fetched, and the second waited for the host's next slot. The start times are
    // the observations' checked_at; the second starts a spacing after the first's reserved slot, and
    // the first may itself have started up to a few hundred ms after its slot on a loaded machine,
    // so the gap is at least the spacing less that (without the spacing it would be a few ms).
    assert.ok([first, second].every((s) => requests.some((r) => r.path === pathOf(s))));
    const starts = observed.map((o) => Date.parse(o[0]?.checkedAt ?? '')).sort((a, b) => a - b);
    assert.ok(
      (starts[1] ?? 0) - (starts[0] ?? 0) >= spacingMs - 500,
      `fetches of one host started ${(starts[1] ?? 0) - (starts[0] ?? 0)} ms apart`,
    );
  });

  test('a scheduled check whose source is paused while it waits for its host reads nothing and records nothing', async () => {
    await svc.pool.query('DELETE FROM competitor_host_slots');
    const admin = testPrincipal();
    const held = await save(admin, saveRequest());
    const waiting = await save(admin, saveRequest());
    for (const s of [held, waiting]) pages[pathOf(s)] = html('Waiting', '<p>text</p>');
    const checker = createCompetitorChecker({
      pool: svc.pool,
      fetchPage: createSafeFetcher(site.fetcherOptions()),
      hostSpacingMs: 1500,
    });
    // A check by hand takes the host's slot: the scheduled one waits a spacing for the next.
    await checker.checkNow(admin.workspaceId, held.sourceId, 'u');
    const ctx = {
      signal: new AbortController().signal,
      inTx: <T>(fn: (c: PoolClient) => Promise<T>) => inTransaction(svc.pool, fn),
    };
    const check = checker.checkScheduled(
      { workspace_id: admin.workspaceId, source_id: waiting.sourceId, due_at: new Date().toISOString() },
      ctx,
    );
    await sleep(300);
    await svc.client.pauseCompetitorSource({ sourceId: waiting.sourceId }, svc.as(admin));
    await check;
    assert.ok(!requests.some((r) => r.path === pathOf(waiting)), 'its page was not fetched');
    const { total } = await svc.client.getCompetitorObservations(
      { sourceId: waiting.sourceId },
      svc.as(admin),
    );
    assert.equal(total, 0, 'nothing was recorded');
  });
});
