import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loggableUrl } from './asset-route.ts';

test('a delivery link is logged without its token; other URLs are logged as they are', () => {
  const asset = '5a7c1e2b-9d3f-4b6a-8e1c-2f4d6b8a0c13';
  assert.equal(loggableUrl(`/assets/${asset}?token=ws.1700000000.c2lnbmF0dXJl`), `/assets/${asset}?token=…`);
  assert.equal(loggableUrl(`/assets/${asset}`), `/assets/${asset}`);
  assert.equal(loggableUrl('/dashboard/changes?status=prepared'), '/dashboard/changes?status=prepared');
});
