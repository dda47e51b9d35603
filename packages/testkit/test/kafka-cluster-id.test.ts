/**
 * Kafka cluster ids, as the storage tool takes them: 22 characters of URL-safe base64 and never a
 * leading '-', which the tool reads as an option. A plain random id starts with '-' one time in 64,
 * so 500 draws without one would come from an unguarded generator about once in 2,500 runs.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { CLUSTER_ID_SH, clusterId } from '../src/kafka-cluster-id.ts';

const SHAPE = /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/;

test('the ids made in Node are 16 random bytes in URL-safe base64, none starting with a dash', () => {
  const ids = Array.from({ length: 5000 }, clusterId);
  for (const id of ids) assert.match(id, SHAPE);
  assert.equal(new Set(ids).size, ids.length);
  assert.equal(Buffer.from(ids[0] ?? '', 'base64url').length, 16);
});

test('the ids the container entrypoint makes in sh have the same shape, none starting with a dash', () => {
  const out = execFileSync(
    'sh',
    ['-c', `${CLUSTER_ID_SH}\ni=0\nwhile [ $i -lt 500 ]; do new_cluster_id; i=$((i+1)); done`],
    {
      encoding: 'utf8',
    },
  );
  const ids = out.trimEnd().split('\n');
  assert.equal(ids.length, 500);
  for (const id of ids) assert.match(id, SHAPE);
  assert.equal(new Set(ids).size, ids.length);
});
