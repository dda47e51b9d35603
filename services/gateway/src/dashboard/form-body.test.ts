import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Code, ConnectError } from '@connectrpc/connect';
import { decisionRefusal, formTypeRefusal, wholeNumberField } from './form-body.ts';

test('a dashboard form must be urlencoded: multipart and JSON are refused naming the accepted type', () => {
  assert.equal(formTypeRefusal('application/x-www-form-urlencoded'), undefined);
  assert.equal(formTypeRefusal('Application/X-WWW-Form-Urlencoded; charset=UTF-8'), undefined);
  assert.equal(formTypeRefusal(undefined), undefined);
  for (const type of ['multipart/form-data; boundary=x', 'application/json', 'text/plain']) {
    const refusal = formTypeRefusal(type) ?? '';
    assert.match(refusal, /must be sent as application\/x-www-form-urlencoded/);
    assert.ok(refusal.includes(`not ${type.split(';')[0]}`), refusal);
  }
});

test('expected_revision must be a whole number that fits the RPC field, and the refusal names the field', () => {
  assert.deepEqual(wholeNumberField({ expected_revision: '3' }, 'expected_revision'), { value: 3 });
  assert.deepEqual(wholeNumberField({ expected_revision: ' 0 ' }, 'expected_revision'), { value: 0 });
  for (const bad of ['abc', '1.5', '-1', '', '99999999999999999999', '2147483648', '1e3']) {
    const got = wholeNumberField({ expected_revision: bad }, 'expected_revision');
    assert.ok('error' in got, bad);
    assert.match(got.error, /^expected_revision must be a whole number from 0 to 2147483647 \(got "/);
  }
  const missing = wholeNumberField({}, 'expected_revision');
  assert.ok('error' in missing && missing.error.includes('(got nothing)'));
});

test('a decision the service refused says why; one it could not confirm is a 503 that hides the internals', () => {
  const role = 'Your role cannot approve changes.';
  const as = (code: Code, message = 'why') => decisionRefusal(new ConnectError(message, code), role);
  assert.deepEqual(as(Code.PermissionDenied), { status: 403, message: role });
  assert.deepEqual(as(Code.InvalidArgument, 'reason must be 1 to 2000 characters'), {
    status: 400,
    message: 'reason must be 1 to 2000 characters',
  });
  for (const code of [Code.FailedPrecondition, Code.Aborted, Code.AlreadyExists, Code.NotFound]) {
    assert.deepEqual(as(code, 'the change was approved meanwhile'), {
      status: 409,
      message: 'the change was approved meanwhile',
    });
  }
  for (const code of [
    Code.Internal,
    Code.Unknown,
    Code.Unavailable,
    Code.DeadlineExceeded,
    Code.ResourceExhausted,
  ]) {
    const got = as(code, 'pg: connection terminated unexpectedly');
    assert.equal(got.status, 503, Code[code]);
    assert.match(got.message, /could not be confirmed just now; this page shows where things stand/);
    assert.doesNotMatch(got.message, /pg:/);
  }
});
