import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ListProposalsRequestSchema,
  ProposalSchema,
  ProposalStatus,
  ReviewRunSchema,
  RunOutcome,
  RunStatus,
  RunTrigger,
} from '@adsmcp/proto/optimizer/v1/reviews_pb';
import { create, createFileRegistry } from '@bufbuild/protobuf';
import {
  FileDescriptorProtoSchema,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
} from '@bufbuild/protobuf/wkt';
import { ToolFailure } from '../mcp/tool-failure.ts';
import { messageSchema } from './output-schema.ts';
import { requestFrom, resultOf } from './rpc-mapping.ts';

// A message with an enum field of each kind: without presence, optional, repeated, and inside a
// nested message, so that the mapping is tested apart from any service's proto.
const registry = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: 'paint.proto',
    package: 'paint.v1',
    syntax: 'proto3',
    enumType: [
      {
        name: 'Colour',
        value: [
          { name: 'COLOUR_UNSPECIFIED', number: 0 },
          { name: 'COLOUR_DARK_RED', number: 1 },
          { name: 'COLOUR_BLUE', number: 2 },
        ],
      },
    ],
    messageType: [
      {
        name: 'Coat',
        field: [
          { name: 'colour', number: 1, type: Type.ENUM, typeName: '.paint.v1.Colour', label: Label.OPTIONAL },
        ],
      },
      {
        name: 'Paint',
        field: [
          { name: 'colour', number: 1, type: Type.ENUM, typeName: '.paint.v1.Colour', label: Label.OPTIONAL },
          {
            name: 'trim',
            number: 2,
            type: Type.ENUM,
            typeName: '.paint.v1.Colour',
            label: Label.OPTIONAL,
            proto3Optional: true,
            oneofIndex: 0,
          },
          { name: 'layers', number: 3, type: Type.ENUM, typeName: '.paint.v1.Colour', label: Label.REPEATED },
          { name: 'coats', number: 4, type: Type.MESSAGE, typeName: '.paint.v1.Coat', label: Label.REPEATED },
        ],
        oneofDecl: [{ name: '_trim' }],
      },
    ],
  }),
  () => undefined,
);
const Paint = registry.getMessage('paint.v1.Paint');
assert.ok(Paint);

test('a result shows an enum value as its word, and an unset optional enum as null', () => {
  const paint = create(Paint, { colour: 1, layers: [2, 1], coats: [{ colour: 2 }] });
  assert.deepEqual(resultOf(Paint, paint), {
    colour: 'dark_red',
    trim: null,
    layers: ['blue', 'dark_red'],
    coats: [{ colour: 'blue' }],
  });
  assert.equal(resultOf(Paint, create(Paint, { colour: 2, trim: 0 })).trim, null);
});

test('a result refuses an enum without presence left UNSPECIFIED rather than show a word it is not', () => {
  assert.throws(() => resultOf(Paint, create(Paint, {})), /paint\.v1\.Paint\.colour is COLOUR_UNSPECIFIED/);
});

test('arguments name enum values by their words, at any depth', () => {
  const request = requestFrom(Paint, {
    colour: 'blue',
    trim: 'dark_red',
    layers: ['dark_red'],
    coats: [{ colour: 'blue' }],
  }) as unknown as { colour: number; trim: number; layers: number[]; coats: { colour: number }[] };
  assert.deepEqual(
    [request.colour, request.trim, request.layers, request.coats.map((c) => c.colour)],
    [2, 1, [1], [2]],
  );
});

test('an argument word the enum lacks is refused naming the argument and the words', () => {
  const refused = (args: Record<string, unknown>, message: string) =>
    assert.throws(
      () => requestFrom(Paint, args),
      (err) => err instanceof ToolFailure && err.code === 'invalid_argument' && err.message === message,
    );
  refused({ trim: 'green' }, 'trim must be one of dark_red, blue (got "green")');
  // The value's own name is not a word: tools never see it.
  refused({ colour: 'COLOUR_BLUE' }, 'colour must be one of dark_red, blue (got "COLOUR_BLUE")');
  refused(
    { coats: [{ colour: 'blue' }, { colour: 'unspecified' }] },
    'coats[1].colour must be one of dark_red, blue (got "unspecified")',
  );
});

test('the published schema of an enum field lists its words, nullable only where the field has presence', () => {
  const words = { type: 'string', enum: ['dark_red', 'blue'] };
  const schema = messageSchema(Paint) as { properties: Record<string, unknown> };
  assert.deepEqual(schema.properties.colour, words);
  assert.deepEqual(schema.properties.trim, { anyOf: [words, { type: 'null' }] });
  assert.deepEqual(schema.properties.layers, { type: 'array', items: words });
});

test('a field renamed on the wire keeps its tool name and place: a proposal’s state is its status, after run_id', () => {
  const proposal = create(ProposalSchema, {
    proposalId: 'p-1',
    optimizerId: 'o-1',
    accountId: 'a-1',
    runId: 'r-1',
    state: ProposalStatus.CHANGES_REQUESTED,
    revision: 2,
    createdAt: '2026-03-08T07:30:00.000Z',
  });
  const result = resultOf(ProposalSchema, proposal);
  assert.deepEqual(Object.keys(result).slice(0, 6), [
    'proposal_id',
    'optimizer_id',
    'account_id',
    'run_id',
    'status',
    'revision',
  ]);
  assert.equal(result.status, 'changes_requested');
  assert.equal('state' in result, false);
  const schema = messageSchema(ProposalSchema) as { properties: Record<string, unknown>; required: string[] };
  assert.deepEqual(schema.properties.status, {
    type: 'string',
    enum: [
      'pending_review',
      'changes_requested',
      'approved',
      'publishing',
      'published',
      'failed',
      'rejected',
      'cancelled',
      'expired',
    ],
  });
  assert.ok(schema.required.includes('status') && !schema.required.includes('state'));
});

test('a review run shows its state, queued_by and found as status, trigger and outcome, where they always stood', () => {
  const base = {
    runId: 'r-1',
    optimizerId: 'o-1',
    accountId: 'a-1',
    requestedBy: 'agent',
    createdAt: 'c',
    updatedAt: 'u',
  };
  const queued = resultOf(
    ReviewRunSchema,
    create(ReviewRunSchema, { ...base, state: RunStatus.QUEUED, queuedBy: RunTrigger.SCHEDULE }),
  );
  assert.deepEqual(Object.keys(queued).slice(0, 6), [
    'run_id',
    'optimizer_id',
    'account_id',
    'status',
    'trigger',
    'requested_by',
  ]);
  assert.deepEqual([queued.status, queued.trigger, queued.outcome], ['queued', 'schedule', null]);
  const done = resultOf(
    ReviewRunSchema,
    create(ReviewRunSchema, {
      ...base,
      state: RunStatus.COMPLETED,
      queuedBy: RunTrigger.REQUEST,
      found: RunOutcome.NO_CHANGE,
      summary: 's',
    }),
  );
  assert.deepEqual(Object.keys(done).slice(8, 11), ['outcome', 'summary', 'proposal_ids']);
  assert.deepEqual([done.status, done.trigger, done.outcome], ['completed', 'request', 'no_change']);
  const schema = messageSchema(ReviewRunSchema) as { properties: Record<string, unknown> };
  assert.deepEqual(schema.properties.outcome, {
    anyOf: [{ type: 'string', enum: ['proposals', 'no_change', 'insufficient_evidence'] }, { type: 'null' }],
  });
});

test('ads_list_optimization_proposals’ status argument is the request’s state; a word that is no status is refused naming the statuses', () => {
  assert.equal(
    requestFrom(ListProposalsRequestSchema, { status: 'expired', limit: 5 }).state,
    ProposalStatus.EXPIRED,
  );
  for (const word of ['PENDING_REVIEW', 'pending', 'bogus']) {
    assert.throws(
      () => requestFrom(ListProposalsRequestSchema, { status: word }),
      (err) =>
        err instanceof ToolFailure &&
        err.message ===
          `status must be one of pending_review, changes_requested, approved, publishing, published, failed, rejected, cancelled, expired (got "${word}")`,
    );
  }
});
