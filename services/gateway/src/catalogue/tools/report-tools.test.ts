import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codedRefusal } from '@adsmcp/runtime/platform-read/refusal';
import { Code, ConnectError } from '@connectrpc/connect';
import { ToolFailure } from '../../mcp/tool-failure.ts';
import { reportFailure } from './report-tools.ts';

test('a report the marketing service refuses as too large is the tool error report_too_large, in its words', () => {
  const message =
    'the account has more than 100 ad groups; a report covers at most 100: give a campaign_id with fewer';
  const failure = reportFailure(codedRefusal('report_too_large', Code.FailedPrecondition, message));
  assert.ok(failure instanceof ToolFailure);
  assert.equal(failure.code, 'report_too_large');
  assert.equal(failure.message, message);
  const platform = reportFailure(
    codedRefusal('rate_limit_exceeded', Code.Unavailable, 'the ad platform refused the request (HTTP 429)'),
  );
  assert.ok(platform instanceof ToolFailure);
  assert.equal(platform.code, 'rate_limit_exceeded');
});

test('a refusal without its own code is left to the generic mapping of Connect codes', () => {
  const notFound = new ConnectError('no campaign cmp_1 in ad account A', Code.NotFound);
  assert.equal(reportFailure(notFound), notFound);
});
