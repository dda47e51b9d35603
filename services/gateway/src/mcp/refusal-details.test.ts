/**
 * A service's refusal names fields for the agent in its error metadata (adsmcp-refusal-details),
 * and lists issues in its error details (adsmcp.v1.RefusalIssues): the tool error shows them
 * beside its code and message, which they never replace, and a refusal about a change gets that
 * change's review page.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toConnectError } from '@adsmcp/runtime/connect-errors';
import { FailedPreconditionError, InvalidArgumentIssuesError } from '@adsmcp/runtime/errors';
import {
  codedRefusal,
  REFUSAL_CODE_METADATA,
  REFUSAL_DETAILS_METADATA,
  refusalDetailsMetadata,
} from '@adsmcp/runtime/platform-read/refusal';
import { Code, ConnectError } from '@connectrpc/connect';
import { fromServiceError } from './tool-call.ts';

const PUBLIC_URL = 'http://127.0.0.1:8080';
const CHANGE = '5b1e2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e';

const errorOf = (err: ConnectError) =>
  fromServiceError(err, 'req-1', 'write', PUBLIC_URL).structuredContent.error;

test('a refusal naming a change shows its status and change_id, and the gateway adds the change’s review_url', () => {
  const refusal = toConnectError(
    new FailedPreconditionError('the change is not approved yet', { status: 'prepared', change_id: CHANGE }),
  );
  assert.ok(refusal !== undefined);
  assert.deepEqual(errorOf(refusal), {
    code: 'failed_precondition',
    message: 'the change is not approved yet',
    status: 'prepared',
    change_id: CHANGE,
    review_url: `${PUBLIC_URL}/dashboard/changes/${CHANGE}`,
  });
});

test('a refusal with its own code shows its details beside that code', () => {
  const refusal = codedRefusal('rate_limited', Code.ResourceExhausted, 'the snapshot could not be read', {
    run_id: 'r-1',
    claim_token: 't-1',
  });
  assert.deepEqual(errorOf(refusal), {
    code: 'rate_limited',
    message: 'the snapshot could not be read',
    run_id: 'r-1',
    claim_token: 't-1',
  });
});

test('details never replace the code or the message, whoever sends them', () => {
  // A service may not build such details...
  assert.throws(
    () => refusalDetailsMetadata({ code: 'ok', message: 'all fine' }),
    /may not name code, message/,
  );
  // ...and the tool error ignores them from one that sends them anyway.
  const refusal = new ConnectError('the change is rejected', Code.FailedPrecondition, {
    [REFUSAL_DETAILS_METADATA]: JSON.stringify({ code: 'ok', message: 'all fine', status: 'rejected' }),
  });
  assert.deepEqual(errorOf(refusal), {
    code: 'failed_precondition',
    message: 'the change is rejected',
    status: 'rejected',
  });
  const coded = new ConnectError('too large', Code.FailedPrecondition, {
    [REFUSAL_CODE_METADATA]: 'report_too_large',
    [REFUSAL_DETAILS_METADATA]: JSON.stringify({ code: 'ok', message: 'all fine' }),
  });
  assert.deepEqual(errorOf(coded), { code: 'report_too_large', message: 'too large' });
});

test('details that are not a JSON object are not shown', () => {
  for (const raw of ['not json', '["a"]', '"text"', 'null']) {
    const refusal = new ConnectError('refused', Code.FailedPrecondition, { [REFUSAL_DETAILS_METADATA]: raw });
    assert.deepEqual(errorOf(refusal), { code: 'failed_precondition', message: 'refused' }, raw);
  }
});

test('details outside ASCII travel as JSON escapes in the header and read back as they were', () => {
  const metadata = refusalDetailsMetadata({ name: 'Frühling ☀ 🌱' });
  assert.match(metadata[REFUSAL_DETAILS_METADATA] ?? '', /^[\x20-\x7e]+$/);
  const refusal = new ConnectError('refused', Code.FailedPrecondition, metadata);
  assert.equal((errorOf(refusal) as { name: string }).name, 'Frühling ☀ 🌱');
  assert.throws(() => refusalDetailsMetadata({ text: 'x'.repeat(5000) }), /at most 4096/);
});

test('a refusal listing issues shows them as error.issues, each with its path and message, beside code and message', () => {
  const issues = [
    {
      path: 'variants[1].source_image_url',
      message: 'variants[1].source_image_url https://img.example.com/a.png: 404',
    },
    {
      path: 'variants[3].source_image_url',
      message: 'variants[3].source_image_url https://img.example.com/a.png: 404',
    },
  ];
  const refusal = toConnectError(new InvalidArgumentIssuesError('one image could not be saved', issues));
  assert.ok(refusal !== undefined);
  assert.deepEqual(errorOf(refusal), {
    code: 'invalid_argument',
    message: 'one image could not be saved',
    issues,
  });
  // A coded refusal lists its issues too, and no scalar detail may stand in for them.
  const coded = codedRefusal('batch_refused', Code.InvalidArgument, 'refused', { item_id: 'i-1' }, issues);
  assert.deepEqual(errorOf(coded), { code: 'batch_refused', message: 'refused', item_id: 'i-1', issues });
  assert.throws(() => refusalDetailsMetadata({ issues: 'none' }), /may not name issues/);
});
