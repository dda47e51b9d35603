/**
 * The health of a connection's platform credential: its expiry recorded as the platform (the real
 * sandbox) reports it when the account is connected, and read back with a status that warns 14 days
 * ahead.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { credentialStatus } from '../src/domain/connection.ts';
import { principal, type Stack, startStack } from './stack.ts';

let stack: Stack;

before(async () => {
  stack = await startStack();
});

after(async () => {
  await stack?.stop();
});

describe('credential expiry', () => {
  it('records the expiry the platform reports when the account is connected, and lists it with its status', async () => {
    const admin = principal();
    const account = await stack.newSandboxAccount();
    const { account: created } = await stack.client.createConnection(
      {
        name: 'Expiring account',
        currency: 'USD',
        timeZone: 'America/New_York',
        canWrite: true,
        upstreamAccountId: account.accountId,
        upstreamCredential: account.credential,
      },
      stack.as(admin),
    );
    // The sandbox issues credentials valid for 60 days, as platforms' long-lived tokens are.
    const days = (Date.parse(created?.credentialExpiresAt ?? '') - Date.now()) / 86_400_000;
    assert.ok(days > 59.9 && days <= 60, `expires in ${days} days`);
    assert.equal(created?.credentialStatus, 'ok');
    const { accounts } = await stack.client.listAccounts({}, stack.as(admin));
    const listed = accounts.find((a) => a.accountId === created?.accountId);
    assert.equal(listed?.credentialExpiresAt, created?.credentialExpiresAt);
    assert.equal(listed?.credentialStatus, 'ok');
  });

  it('is expiring soon within 14 days of its expiry, expired from it on, and unknown when the platform did not say', () => {
    const expiry = new Date('2026-12-31T00:00:00Z');
    const daysBefore = (d: number) => new Date(expiry.getTime() - d * 86_400_000);
    assert.equal(credentialStatus(expiry, daysBefore(14.01)), 'ok');
    assert.equal(credentialStatus(expiry, daysBefore(14)), 'expiring_soon');
    assert.equal(credentialStatus(expiry, daysBefore(0.001)), 'expiring_soon');
    assert.equal(credentialStatus(expiry, expiry), 'expired');
    assert.equal(credentialStatus(null, expiry), 'unknown');
  });
});
