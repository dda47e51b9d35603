import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChangeSchema, ExpirySettingsSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { create } from '@bufbuild/protobuf';
import {
  type AuditCursor,
  type AuditEvent,
  type AuditSource,
  auditPage,
  changeEventOf,
  changeEvents,
  gatewayEvents,
  matches,
  mergeByTime,
  newerFirst,
} from './audit-events.ts';
import { accountTimeText } from './local-time.ts';

const ALICE = '11111111-1111-4111-8111-111111111111';
const BOB = '22222222-2222-4222-8222-222222222222';
const CRED = '33333333-3333-4333-8333-333333333333';
const ACCOUNT = '44444444-4444-4444-8444-444444444444';

const ctx = {
  people: new Map([
    [ALICE, 'alice@x.example'],
    [BOB, 'bob@x.example'],
  ]),
  connections: new Map([[CRED, { name: 'Claude on Alice’s laptop', userId: ALICE }]]),
};

const applied = create(ChangeSchema, {
  changeId: '55555555-5555-4555-8555-555555555555',
  accountId: ACCOUNT,
  status: 'applied',
  summary: 'Rename ad 7',
  targetPath: '/ads/7',
  preparedBy: `user:${ALICE} via mcp (${CRED})`,
  preparedAt: '2026-01-01T10:00:00.000Z',
  approvedBy: `user:${BOB} via dashboard (dashboard:${BOB})`,
  approvedAt: '2026-01-01T10:05:00.000Z',
  applyRequestedBy: `user:${ALICE} via mcp (${CRED})`,
  applyRequestedAt: '2026-01-01T10:06:00.000Z',
  appliedAt: '2026-01-01T10:06:01.000Z',
  upstreamStatus: 200,
});

describe('audit events', () => {
  test('a change gives its prepare, approval, apply request and apply with the platform’s answer', () => {
    const events = changeEvents(applied, ctx);
    assert.deepEqual(
      events.map((e) => [e.what, e.who, e.connection ?? '']),
      [
        ['change prepared', 'alice@x.example, through an MCP client', 'Claude on Alice’s laptop'],
        ['change approved', 'bob@x.example, in the dashboard', ''],
        ['apply requested', 'alice@x.example, through an MCP client', 'Claude on Alice’s laptop'],
        ['change applied', 'The apply worker', ''],
      ],
    );
    assert.equal(events[3]?.detail, 'the platform answered HTTP 200');
  });

  test('an apply refused before anything was sent says so, not "no answer from the platform"', () => {
    const failed = (error: string, upstreamStatus = 0) =>
      changeEvents(
        create(ChangeSchema, {
          ...applied,
          status: 'failed',
          appliedAt: '',
          upstreamStatus,
          error,
        }),
        ctx,
      ).find((e) => e.what === 'apply failed')?.detail;
    const capRefusal =
      'refused before applying, nothing was sent to the ad account: body.bidding_config.max_bid_micros 1900000 exceeds this account’s bid cap 1800000 (spend guard)';
    assert.equal(failed(capRefusal), capRefusal);
    assert.equal(
      failed(
        'the object changed since this change was prepared (revision 3, now 4); prepare a new change against its current state',
      ),
      'refused before applying, nothing was sent to the ad account: the object changed since this change was prepared (revision 3, now 4); prepare a new change against its current state',
    );
    // Sent, and no answer came back: that is what happened.
    assert.equal(
      failed(
        'the ad platform could not be reached after 5 attempts (timeout); the change may not have been applied',
      ),
      'no answer from the platform: the ad platform could not be reached after 5 attempts (timeout); the change may not have been applied',
    );
    assert.equal(failed('invalid budget', 400), 'the platform answered HTTP 400: invalid budget');
  });

  test('a person settling an unknown outcome is an event naming them, what they found and their note', () => {
    const settled = (resolution: string, status: string) =>
      changeEvents(
        create(ChangeSchema, {
          ...applied,
          status,
          appliedAt: '',
          upstreamStatus: 0,
          error: status === 'failed' ? 'not applied: a person checked the ad platform' : '',
          resolution,
          resolvedBy: `user:${BOB} via dashboard (dashboard:${BOB})`,
          resolvedAt: '2026-01-01T11:00:00.000Z',
          resolutionNote: 'checked the console',
        }),
        ctx,
      ).map((e) => [e.what, e.who, e.detail]);
    const found = settled('applied', 'applied');
    assert.deepEqual(found.at(-1), [
      'outcome settled: applied',
      'bob@x.example, in the dashboard',
      'Rename ad 7; note: checked the console',
    ]);
    // The failed apply before it stays in the change's history.
    assert.ok(found.some(([what]) => what === 'apply failed'));
    assert.deepEqual(settled('not_applied', 'failed').at(-1)?.slice(0, 2), [
      'outcome settled: not applied',
      'bob@x.example, in the dashboard',
    ]);
  });

  test('a connection the OAuth sweep revoked says why', () => {
    const row = {
      id: '3',
      at: new Date('2026-01-01T12:00:00Z'),
      at_text: '2026-01-01T12:00:00.000000Z',
      key: 'g:00000000000000000003',
      actor: 'oauth',
      action: 'credential.revoked',
      target: CRED,
      detail: {
        by: 'oauth sweep',
        reason: 'the client never redeemed its authorization code',
        name: 'Claude',
        oauth_client: 'c1',
      },
    };
    const [event] = gatewayEvents([row], ctx);
    assert.equal(event?.what, 'connection revoked');
    assert.equal(event?.detail, 'revoked because the client never redeemed its authorization code');
  });

  test('no event shows a credential id, and gateway decisions on changes are not shown twice', () => {
    const rows = [
      {
        id: '1',
        at: new Date('2026-01-01T10:05:00Z'),
        at_text: '2026-01-01T10:05:00.000000Z',
        key: 'g:00000000000000000001',
        actor: `user:${BOB}`,
        action: 'change.approved',
        target: applied.changeId,
        detail: {},
      },
      {
        id: '2',
        at: new Date('2026-01-01T11:00:00Z'),
        at_text: '2026-01-01T11:00:00.000000Z',
        key: 'g:00000000000000000002',
        actor: `credential:${CRED}`,
        action: 'credential.revoked',
        target: CRED,
        detail: { by: 'ads_disconnect_client' },
      },
    ];
    const events = mergeByTime(changeEvents(applied, ctx), gatewayEvents(rows, ctx));
    assert.deepEqual(
      events.map((e) => e.what),
      ['connection revoked', 'change applied', 'apply requested', 'change approved', 'change prepared'],
    );
    assert.equal(events[0]?.object, 'connection “Claude on Alice’s laptop”');
    assert.equal(events[0]?.personId, ALICE);
    assert.ok(!JSON.stringify(events).includes(`"${CRED}`), 'no credential id as a value');
    assert.ok(!events.some((e) => [e.who, e.object, e.detail, e.connection ?? ''].join(' ').includes(CRED)));
  });

  test('filters keep the person’s, the account’s and the object’s events', () => {
    const events = changeEvents(applied, ctx);
    assert.equal(events.filter((e) => matches(e, { accountId: '', object: '', personId: BOB })).length, 1);
    assert.equal(
      events.filter((e) => matches(e, { accountId: ACCOUNT, object: '/ads/7', personId: '' })).length,
      4,
    );
    assert.equal(
      events.filter((e) => matches(e, { accountId: ACCOUNT, object: '/ads/8', personId: '' })).length,
      0,
    );
  });

  test('an instant is shown in the account’s zone, and an unknown zone is said to be unknown', () => {
    assert.equal(accountTimeText('2026-01-01T10:00:00Z', 'Asia/Tokyo'), '2026-01-01 19:00 Asia/Tokyo');
    assert.equal(accountTimeText('2026-01-01T10:00:00Z', 'Mars/Olympus'), '(time zone Mars/Olympus unknown)');
  });
});

describe('the audit log’s pages', () => {
  /** A source over `events` (any order), read by keyset as the stores read theirs. */
  const source = (events: AuditEvent[]) => {
    const sorted = [...events].sort(newerFirst);
    let reads = 0;
    const read: AuditSource = async (after, limit) => {
      reads += 1;
      const from = after ? sorted.findIndex((e) => newerFirst(e, after) > 0) : 0;
      return from < 0 ? [] : sorted.slice(from, from + limit);
    };
    return { read, reads: () => reads };
  };
  const event = (at: string, key: string, object = ''): AuditEvent => ({
    at,
    key,
    what: 'x',
    who: 'y',
    object,
    detail: '',
  });

  test('pages through two sources to the oldest event, each once, newest first', async () => {
    const changes = Array.from({ length: 130 }, (_, i) =>
      event(
        new Date(Date.UTC(2026, 0, 1, 0, 0, i * 2)).toISOString(),
        `c:${String(i).padStart(3, '0')}:prepared`,
      ),
    );
    const gateway = Array.from({ length: 120 }, (_, i) =>
      event(
        new Date(Date.UTC(2026, 0, 1, 0, 0, i * 2 + 1)).toISOString(),
        `g:${String(i).padStart(20, '0')}`,
      ),
    );
    // Two events at the same instant are ordered by key, across sources.
    gateway.push(event('2020-01-01T00:00:00.000000Z', 'g:00000000000000099999'));
    changes.push(event('2020-01-01T00:00:00.000000Z', 'c:999:prepared'));
    const a = source(changes);
    const b = source(gateway);
    const seen: AuditEvent[] = [];
    let cursor: AuditCursor | undefined;
    let pages = 0;
    do {
      const page = await auditPage([a.read, b.read], cursor, 50, () => true, 40);
      seen.push(...page.events);
      cursor = page.next;
      pages += 1;
    } while (cursor && pages < 20);
    assert.equal(pages, 6);
    assert.equal(seen.length, 252);
    assert.equal(new Set(seen.map((e) => e.key)).size, 252, 'no event twice');
    assert.deepEqual(seen, [...seen].sort(newerFirst));
    assert.deepEqual(
      seen.slice(-2).map((e) => e.key),
      ['g:00000000000000099999', 'c:999:prepared'],
    );
  });

  test('a filter reads on until the page is full or the sources end', async () => {
    const many = Array.from({ length: 2500 }, (_, i) =>
      event(
        new Date(Date.UTC(2026, 0, 2) - i * 1000).toISOString(),
        `g:${String(i).padStart(20, '0')}`,
        'noise',
      ),
    );
    many.push(event('2019-06-01T00:00:00.000000Z', 'g:99999999999999999999', 'the old one'));
    const g = source(many);
    const page = await auditPage([g.read], undefined, 50, (e) => e.object.includes('old'));
    assert.deepEqual(
      page.events.map((e) => e.object),
      ['the old one'],
    );
    assert.equal(page.next, undefined);
  });
});

describe('a change of the expiry settings', () => {
  test('names the admin who set it, both durations, and links to the settings page', () => {
    const e = changeEventOf(
      {
        kind: 'expiry_settings_changed',
        at: '2026-01-02T09:00:00.000000Z',
        key: 's:20260102090000000000',
        settings: create(ExpirySettingsSchema, {
          preparedValidHours: 48,
          approvalValidHours: 6,
          setBy: `user:${BOB} via dashboard (dashboard:${BOB})`,
          setAt: '2026-01-02T09:00:00.000Z',
        }),
      },
      ctx,
    );
    assert.equal(e.what, 'change expiry set');
    assert.match(e.who, /bob@x\.example/);
    assert.equal(e.personId, BOB);
    assert.equal(e.object, 'workspace settings');
    assert.match(e.detail, /expires 48 hours after it was prepared; an approval, 6 hours after/);
    assert.equal(e.link, '/dashboard/settings');
    assert.equal(e.accountId, undefined, 'no ad account: an account filter leaves it out');
  });
});
