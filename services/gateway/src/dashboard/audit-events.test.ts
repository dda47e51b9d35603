import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AuditEventSchema, type AuditEvent as LogRow } from '@adsmcp/proto/changes/v1/audit_pb';
import { create } from '@bufbuild/protobuf';
import { actorsOf, auditEventOf, exportLine } from './audit-events.ts';

const ALICE = '11111111-1111-4111-8111-111111111111';
const BOB = '22222222-2222-4222-8222-222222222222';
const CRED = '33333333-3333-4333-8333-333333333333';
const ACCOUNT = '44444444-4444-4444-8444-444444444444';
const CHANGE = '55555555-5555-4555-8555-555555555555';

const ctx = {
  people: new Map([
    [ALICE, 'alice@x.example'],
    [BOB, 'bob@x.example'],
  ]),
  connections: new Map([[CRED, { name: 'Claude on Alice’s laptop', userId: ALICE }]]),
};

let seq = 0n;
const row = (kind: string, actor: string, details: object, subject = ''): LogRow =>
  create(AuditEventSchema, {
    seq: ++seq,
    at: '2026-01-01T10:00:00.000Z',
    actor,
    kind,
    subject,
    detailsJson: JSON.stringify(details),
    prevHash: 'a'.repeat(64),
    hash: 'b'.repeat(64),
  });

const change = {
  change_id: CHANGE,
  account_id: ACCOUNT,
  target_path: '/ads/7',
  summary: 'Rename ad 7',
};

const words = (r: LogRow) => {
  const e = auditEventOf(r, ctx);
  return [e.what, e.who, e.connection ?? '', e.detail];
};

describe('audit events in words', () => {
  test('a change’s prepare, approval and apply name the person, the channel, the connection and the platform’s answer', () => {
    assert.deepEqual(words(row('change.prepared', `user:${ALICE} via mcp (${CRED})`, change, CHANGE)), [
      'change prepared',
      'alice@x.example, through an MCP client',
      'Claude on Alice’s laptop',
      'Rename ad 7',
    ]);
    assert.deepEqual(
      words(row('change.approved', `user:${BOB} via dashboard (dashboard:${BOB})`, change, CHANGE)).slice(
        0,
        2,
      ),
      ['change approved', 'bob@x.example, in the dashboard'],
    );
    const applied = auditEventOf(
      row('change.applied', 'worker:apply', { ...change, upstream_status: 200 }, CHANGE),
      ctx,
    );
    assert.deepEqual(
      [applied.what, applied.who, applied.detail, applied.accountId, applied.object, applied.link],
      [
        'change applied',
        'The apply worker',
        'the platform answered HTTP 200',
        ACCOUNT,
        '/ads/7',
        `/dashboard/changes/${CHANGE}`,
      ],
    );
  });

  test('an apply refused before anything was sent says so, not "no answer from the platform"', () => {
    const failed = (error: string, upstream_status?: number) =>
      auditEventOf(row('change.failed', 'worker:apply', { ...change, error, upstream_status }, CHANGE), ctx)
        .detail;
    assert.equal(
      failed('the object changed since this change was prepared (revision 3, now 4)'),
      'refused before applying, nothing was sent to the ad account: the object changed since this change was prepared (revision 3, now 4)',
    );
    assert.equal(
      failed('the ad platform could not be reached after 5 attempts (timeout)'),
      'no answer from the platform: the ad platform could not be reached after 5 attempts (timeout)',
    );
    assert.equal(failed('invalid budget', 400), 'the platform answered HTTP 400: invalid budget');
  });

  test('the gateway’s records: a sweep’s revocation says why, a role change names the member', () => {
    assert.deepEqual(
      words(
        row(
          'credential.revoked',
          'oauth',
          { reason: 'the client never redeemed its authorization code', name: 'Claude' },
          CRED,
        ),
      ).slice(0, 1),
      ['connection revoked'],
    );
    const revoked = auditEventOf(
      row(
        'credential.revoked',
        'oauth',
        { reason: 'the client never redeemed its authorization code' },
        CRED,
      ),
      ctx,
    );
    assert.equal(revoked.detail, 'revoked because the client never redeemed its authorization code');
    assert.equal(revoked.object, 'connection “Claude on Alice’s laptop”');
    const role = auditEventOf(
      row('member.role_changed', `user:${BOB}`, { from: 'viewer', to: 'editor' }, ALICE),
      ctx,
    );
    assert.deepEqual(
      [role.what, role.who, role.object, role.detail],
      ['role changed', 'bob@x.example, in the dashboard', 'member alice@x.example', 'viewer → editor'],
    );
  });

  test('no event shows a credential id', () => {
    const events = [
      row('credential.revoked', `credential:${CRED}`, { by: 'ads_disconnect_client' }, CRED),
      row('change.prepared', `user:${ALICE} via mcp (${CRED})`, change, CHANGE),
    ].map((r) => auditEventOf(r, ctx));
    assert.equal(events[0]?.who, 'alice@x.example, through an MCP client');
    for (const e of events)
      assert.ok(![e.who, e.object, e.detail, e.connection ?? '', e.what].join(' ').includes(CRED));
  });

  test('the expiry settings, a spend guard and a standard say what was set', () => {
    const expiry = auditEventOf(
      row('expiry.set', `user:${BOB} via dashboard (dashboard:${BOB})`, {
        prepared_valid_hours: 48,
        approval_valid_hours: 6,
      }),
      ctx,
    );
    assert.equal(expiry.what, 'change expiry set');
    assert.match(expiry.detail, /expires 48 hours after it was prepared; an approval, 6 hours after/);
    assert.equal(expiry.link, '/dashboard/settings');
    const guard = auditEventOf(
      row(
        'spend_guard.set',
        `user:${BOB} via dashboard`,
        { account_id: ACCOUNT, max_daily_budget_micros: '5000000', max_bid_micros: null },
        ACCOUNT,
      ),
      ctx,
    );
    assert.deepEqual(
      [guard.what, guard.who, guard.accountId, guard.detail],
      [
        'spend guard set',
        'bob@x.example, in the dashboard',
        ACCOUNT,
        'daily budget cap 5000000 micros; bid cap no cap',
      ],
    );
    const standard = auditEventOf(
      row('standard.archived', `user:${ALICE} via mcp (${CRED})`, {
        name: 'Naming',
        account_id: ACCOUNT,
        revision: 3,
      }),
      ctx,
    );
    assert.deepEqual([standard.what, standard.object], ['account standard archived', 'standard “Naming”']);
  });

  test('a kind this gateway does not know is still listed, by its name', () => {
    assert.equal(auditEventOf(row('webhook.created', 'operator', {}), ctx).what, 'webhook created');
  });

  test('a person’s events are theirs in the dashboard and through each of their connections', () => {
    assert.deepEqual(actorsOf(ALICE.toUpperCase(), ctx.connections), [`user:${ALICE}`, `credential:${CRED}`]);
    assert.deepEqual(actorsOf(BOB, ctx.connections), [`user:${BOB}`]);
  });

  test('an exported line carries every field and both hashes', () => {
    const line = exportLine(row('change.prepared', 'operator', change, CHANGE));
    assert.ok(line.endsWith('\n'));
    const parsed = JSON.parse(line);
    assert.deepEqual(Object.keys(parsed), [
      'seq',
      'at',
      'actor',
      'kind',
      'subject',
      'details',
      'source_key',
      'prev_hash',
      'hash',
    ]);
    assert.deepEqual(parsed.details, change);
    assert.equal(parsed.hash, 'b'.repeat(64));
  });

  test('the controls, pending standard changes and webhooks say what happened in words, not by their kind', () => {
    const admin = `user:${BOB} via dashboard (dashboard:${BOB})`;
    const envelope = auditEventOf(
      row(
        'account.spend_envelope_set',
        admin,
        {
          account_id: ACCOUNT,
          envelope_micros: '50000000',
          fail_closed: true,
          previous_envelope_micros: null,
        },
        ACCOUNT,
      ),
      ctx,
    );
    assert.equal(envelope.what, 'spend envelope set');
    assert.match(envelope.detail, /50000000 micros; no envelope, no write \(was none\)/);
    assert.equal(envelope.link, `/dashboard/accounts/${ACCOUNT}/controls`);
    const frozen = auditEventOf(
      row('account.frozen', admin, { account_id: null, scope: 'workspace', reason: 'quarter close' }),
      ctx,
    );
    assert.deepEqual(
      [frozen.what, frozen.object, frozen.detail],
      ['workspace frozen', 'the whole workspace', 'quarter close'],
    );
    const pending = auditEventOf(
      row(
        'standard.change_pending',
        `credential:${CRED}`,
        {
          account_id: ACCOUNT,
          name: 'Landing pages',
          action: 'save',
          base_revision: 2,
          loosenings: ['adds allowed domain elsewhere.test'],
          requested_by: 'an agent',
        },
        'std-1',
      ),
      ctx,
    );
    assert.equal(pending.what, 'loosening of a standard waits for a person');
    assert.match(
      pending.detail,
      /save of revision 2 — adds allowed domain elsewhere\.test — asked by an agent/,
    );
    const delivery = auditEventOf(
      row('webhook.failed', 'worker:webhooks', {
        webhook_id: 'wh-1',
        event: 'change.approved',
        subject_id: CHANGE,
        attempt: 1,
        response_status: 500,
      }),
      ctx,
    );
    assert.equal(delivery.what, 'webhook delivery failed (to be retried)');
    assert.match(delivery.detail, /change\.approved; .*; attempt 1; answered 500/);
  });
});
