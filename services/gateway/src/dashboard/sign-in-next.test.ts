import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dashboardNext } from './sign-in-next.ts';

test('sign-in continues to the dashboard page that asked for it', () => {
  assert.equal(dashboardNext('/dashboard/changes/chg_01H'), '/dashboard/changes/chg_01H');
  assert.equal(
    dashboardNext('/dashboard/changes?status=prepared&page=2'),
    '/dashboard/changes?status=prepared&page=2',
  );
  assert.equal(dashboardNext('/dashboard/oauth/AbC_1-2'), '/dashboard/oauth/AbC_1-2');
});

test('sign-in never continues off the dashboard, nor back to sign-in or sign-out', () => {
  for (const next of [
    'https://evil.test/dashboard',
    '//evil.test/dashboard',
    '/dashboard//evil.test',
    '/dashboard\\..\\x',
    '/dashboard/../mcp',
    '/dashboardx',
    '/mcp',
    '/dashboard/login',
    '/dashboard/login?next=%2Fdashboard',
    '/dashboard/logout',
    `/dashboard/${'a'.repeat(1_000)}`,
    42,
    undefined,
  ]) {
    assert.equal(dashboardNext(next), undefined, String(next));
  }
});
