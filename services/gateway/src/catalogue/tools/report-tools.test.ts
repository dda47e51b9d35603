import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reportTools } from './report-tools.ts';

test('a report is given the time of its up to 300 platform reads, not an internal call’s 30 s', () => {
  const create = reportTools.find((t) => t.name === 'ads_create_performance_report');
  assert.equal(create?.route.kind, 'rpc');
  assert.equal(create.route.kind === 'rpc' ? create.route.timeoutMs : undefined, 600_000);
  // The listing and reading of saved reports are quick reads under the default deadline.
  for (const t of reportTools.filter((t) => t !== create)) {
    assert.equal(t.route.kind === 'rpc' ? t.route.timeoutMs : 'not rpc', undefined, t.name);
  }
});
