import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validate } from '../schema.ts';
import { completeRun, editProposal, listRuns, reviewProposal } from './review-tools.ts';

// The bounds of the review tools' arguments are checked at the edge: each is refused with a
// message naming the argument and the rule.

const variant = (patch: Record<string, unknown> = {}) => ({
  base_ad_id: 'ad_1',
  name: 'Offer in the title',
  title: 'Free shipping today',
  body: 'Plants at your door in two days.',
  target_url: 'https://example.com/plants',
  rationale: 'Low CTR with enough evidence.',
  hypothesis: 'Naming the offer raises CTR.',
  ...patch,
});

const complete = (patch: Record<string, unknown> = {}) => ({
  run_id: '5b2f7c1d-9e4a-4f3b-8c6d-1a2e3f4b5c6d',
  claim_token: 'c3d4e5f6-a7b8-4c9d-8e1f-2a3b4c5d6e7f',
  outcome: 'proposals',
  summary: 'One weak ad.',
  variants: [variant()],
  ...patch,
});

const messages = (schema: Parameters<typeof validate>[0], args: unknown) =>
  validate(schema, args).map((i) => i.message);

describe('completing a run', () => {
  test('a completion within every bound is accepted', () => {
    assert.deepEqual(messages(completeRun.input, complete()), []);
    assert.deepEqual(
      messages(completeRun.input, complete({ outcome: 'no_change', variants: undefined })),
      [],
    );
  });

  test('a variant’s title is 1 to 50 characters with visible content, its body at most 100', () => {
    const [long] = messages(completeRun.input, complete({ variants: [variant({ title: 'x'.repeat(51) })] }));
    assert.match(long ?? '', /variants\[0\]\.title/);
    assert.match(long ?? '', /50/);
    assert.equal(messages(completeRun.input, complete({ variants: [variant({ title: '   ' })] })).length, 1);
    assert.match(
      messages(completeRun.input, complete({ variants: [variant({ body: 'y'.repeat(101) })] }))[0] ?? '',
      /variants\[0\]\.body/,
    );
  });

  test('at most 100 variants, an outcome from the list, and no unknown fields', () => {
    const many = Array.from({ length: 101 }, (_, i) => variant({ base_ad_id: `ad_${i}` }));
    assert.match(
      messages(completeRun.input, complete({ variants: many }))[0] ?? '',
      /at most 100|1 to 100|0 to 100/,
    );
    assert.match(messages(completeRun.input, complete({ outcome: 'approve' }))[0] ?? '', /outcome/);
    assert.match(
      messages(completeRun.input, complete({ variants: [variant({ extra: 1 })] }))[0] ?? '',
      /extra/,
    );
    assert.match(messages(completeRun.input, complete({ claim_token: 'nope' }))[0] ?? '', /claim_token/);
  });
});

describe('runs and proposals', () => {
  test('runs list by the spec’s statuses, in pages of 1 to 100', () => {
    assert.deepEqual(messages(listRuns.input, { status: 'queued', limit: 100, offset: 100_000 }), []);
    assert.match(messages(listRuns.input, { status: 'running' })[0] ?? '', /status/);
    assert.match(messages(listRuns.input, { limit: 101 })[0] ?? '', /limit/);
    assert.match(messages(listRuns.input, { offset: 100_001 })[0] ?? '', /offset/);
  });

  test('a review decision is reject or request_changes, with a note of 1 to 4000 characters; approval is not one', () => {
    const review = (patch: Record<string, unknown>) => ({
      proposal_id: '7e6d5c4b-3a29-4817-9f6e-5d4c3b2a1908',
      expected_revision: 1,
      decision: 'reject',
      note: 'Off brand.',
      ...patch,
    });
    assert.deepEqual(messages(reviewProposal.input, review({})), []);
    assert.match(messages(reviewProposal.input, review({ decision: 'approve' }))[0] ?? '', /decision/);
    assert.match(messages(reviewProposal.input, review({ note: 'n'.repeat(4001) }))[0] ?? '', /note/);
    assert.match(
      messages(reviewProposal.input, review({ expected_revision: 0 }))[0] ?? '',
      /expected_revision/,
    );
  });

  test('an edit needs the proposal, its revision and a whole variant', () => {
    assert.match(
      messages(editProposal.input, {
        proposal_id: '7e6d5c4b-3a29-4817-9f6e-5d4c3b2a1908',
        expected_revision: 1,
      })[0] ?? '',
      /variant/,
    );
  });
});
