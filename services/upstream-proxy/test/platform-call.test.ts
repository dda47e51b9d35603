import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { type CallInput, MAX_FILE_BYTES, validateCall } from '../src/domain/platform-call.ts';

const FILE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
const NONE = new Uint8Array(0);

const input = (extra: Partial<CallInput>): CallInput => ({
  method: 'POST',
  path: '/files',
  query: [],
  bodyJson: '',
  idempotencyKey: 'upload-1',
  body: FILE,
  contentType: 'image/png',
  ...extra,
});

/** Asserts that validateCall refuses `call` with an InvalidArgumentError: this message, or one matching. */
function refuses(call: CallInput, message: string | RegExp): void {
  assert.throws(
    () => validateCall(call),
    (err: unknown) => {
      assert.ok(err instanceof InvalidArgumentError, String(err));
      if (typeof message === 'string') assert.equal(err.message, message);
      else assert.match(err.message, message);
      return true;
    },
  );
}

describe('validateCall: a file upload', () => {
  it('takes POST /files with a PNG or JPEG body as a mutation with its key, and no JSON body', () => {
    for (const contentType of ['image/png', 'image/jpeg']) {
      const call = validateCall(input({ contentType }));
      assert.deepEqual(call, {
        method: 'POST',
        path: '/files',
        query: [],
        body: undefined,
        file: { bytes: FILE, contentType },
        idempotencyKey: 'upload-1',
        readOnly: false,
      });
    }
  });

  it('takes a file of exactly 5 MiB and refuses one byte more', () => {
    assert.equal(MAX_FILE_BYTES, 5 * 1024 * 1024);
    const call = validateCall(input({ body: new Uint8Array(MAX_FILE_BYTES) }));
    assert.equal(call.file?.bytes.length, MAX_FILE_BYTES);
    refuses(
      input({ body: new Uint8Array(MAX_FILE_BYTES + 1) }),
      /^body must be at most 5242880 bytes \(5 MiB\) \(got 5242881\)$/,
    );
  });

  it('refuses a body on any path but exactly /files, or with any method but POST', () => {
    for (const path of ['/files/', '/files/1', '/ads/1', '/file']) {
      refuses(
        input({ path, bodyJson: '{}' }),
        `body (a file's bytes) is only for POST /files; send JSON in body_json (got a body for POST "${path}")`,
      );
    }
    refuses(
      input({ method: 'GET', idempotencyKey: '' }),
      /^body \(a file's bytes\) is only for POST \/files; send JSON in body_json \(got a body for GET "\/files"\)$/,
    );
  });

  it('refuses POST /files without a body, even with JSON', () => {
    refuses(
      input({ body: NONE }),
      /^body is required for POST \/files: the file's bytes, with content_type image\/png or image\/jpeg \(body_json is not used\)$/,
    );
    refuses(input({ body: NONE, bodyJson: '{"url":"https://example.com/a.png"}' }), /^body is required/);
  });

  it('refuses a content_type without a body, on a JSON POST or a GET', () => {
    refuses(
      input({ path: '/ads/1', body: NONE, bodyJson: '{}', contentType: 'image/png' }),
      /^content_type is only for a file upload \(POST \/files\) with its bytes in body; leave it empty \(got "image\/png"\)$/,
    );
    refuses(
      input({ method: 'GET', path: '/ads', body: NONE, idempotencyKey: '', contentType: 'application/json' }),
      /^content_type is only for a file upload/,
    );
  });

  it('refuses a content_type other than image/png or image/jpeg, exactly as written', () => {
    for (const contentType of [
      'image/gif',
      'image/PNG',
      'image/png; charset=binary',
      'application/octet-stream',
    ]) {
      refuses(
        input({ contentType }),
        `content_type must be image/png or image/jpeg for a file upload (POST /files) (got ${JSON.stringify(contentType)})`,
      );
    }
    refuses(input({ contentType: '' }), /\(got none\)$/);
  });

  it('refuses an upload that has body_json as well', () => {
    refuses(
      input({ bodyJson: '{}' }),
      /^body_json must be empty for a file upload \(POST \/files\): the file's bytes go in body$/,
    );
  });

  it('wants an idempotency key, as every POST that changes something does', () => {
    refuses(input({ idempotencyKey: '' }), /^idempotency_key is required for POST/);
  });

  it('leaves every other call as it was: no file, JSON bodies checked as before', () => {
    const update = validateCall(
      input({ path: '/ads/1', body: NONE, contentType: '', bodyJson: '{"status":"paused"}' }),
    );
    assert.equal(update.file, undefined);
    assert.equal(update.body, '{"status":"paused"}');
    const read = validateCall(
      input({ method: 'GET', path: '/ads', body: NONE, contentType: '', idempotencyKey: '' }),
    );
    assert.deepEqual([read.file, read.body, read.readOnly], [undefined, undefined, true]);
    refuses(
      input({ path: '/ads/1', body: NONE, contentType: '', bodyJson: '' }),
      /^body_json must be the text of a JSON object/,
    );
  });
});
