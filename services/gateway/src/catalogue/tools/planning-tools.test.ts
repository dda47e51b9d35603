import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allTools } from './index.ts';
import { PREPARE_TOOLS } from './planning-tools.ts';

test('ads_preflight_change can plan for every prepare tool of the catalogue, and only those', () => {
  const prepareTools = allTools.filter((t) => t.behavior === 'prepare').map((t) => t.name);
  assert.deepEqual([...PREPARE_TOOLS.keys()].sort(), prepareTools.sort());
});
