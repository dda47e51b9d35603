/** The workspace's audit log: append (the gateway's own events), list by keyset, verify the chain. */
import type {
  AppendAuditEventRequest,
  AuditEventSchema,
  AuditService,
} from '@adsmcp/proto/changes/v1/audit_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import { inTransaction } from '@adsmcp/runtime/db';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isRecord } from '@adsmcp/runtime/json';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import {
  type AuditDetails,
  type AuditEventInput,
  type AuditRow,
  appendChainedAuditEvents,
  checkAuditChain,
  listAuditEvents,
} from '../store/audit-store.ts';

const MAX_DETAILS_BYTES = 16 * 1024;
const KIND = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
// NUL cannot be stored in text; other control characters would hide what a row says.
const CONTROL = /\p{Cc}/u;

function boundedText(field: string, value: string, max: number, required = false): string {
  if (required && value === '') throw new InvalidArgumentError(`\`${field}\` is required`);
  if ([...value].length > max)
    throw new InvalidArgumentError(
      `\`${field}\` must be at most ${max} characters (got ${[...value].length})`,
    );
  if (CONTROL.test(value)) throw new InvalidArgumentError(`\`${field}\` must not contain control characters`);
  return value;
}

function detailsOf(text: string, field: string): AuditDetails {
  if (text === '') return {};
  if (Buffer.byteLength(text, 'utf8') > MAX_DETAILS_BYTES)
    throw new InvalidArgumentError(`\`${field}\` must be at most ${MAX_DETAILS_BYTES} bytes`);
  let value: unknown;
  let nul = false;
  try {
    value = JSON.parse(text, (key, v: unknown) => {
      if (key.includes('\0') || (typeof v === 'string' && v.includes('\0'))) nul = true;
      return v;
    });
  } catch {
    throw new InvalidArgumentError(`\`${field}\` must be JSON text`);
  }
  if (!isRecord(value)) throw new InvalidArgumentError(`\`${field}\` must be a JSON object`);
  // jsonb refuses NUL in a string: say so by name instead of failing in the database.
  if (nul) throw new InvalidArgumentError(`\`${field}\` must not contain NUL characters`);
  return value;
}

function atOf(text: string, field: string): Date | undefined {
  if (text === '') return undefined;
  const at = new Date(text);
  if (
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(text) ||
    Number.isNaN(at.getTime())
  )
    throw new InvalidArgumentError(
      `\`${field}\` must be an RFC 3339 time such as 2026-01-31T09:30:00Z (got ${JSON.stringify(text)})`,
    );
  return at;
}

/** An event to append, checked field by field (`prefix` places the fields in a batch). */
function eventOf(workspaceId: string, req: AppendAuditEventRequest, prefix: string): AuditEventInput {
  const kind = boundedText(`${prefix}kind`, req.kind, 80, true);
  if (!KIND.test(kind))
    throw new InvalidArgumentError(
      `\`${prefix}kind\` must be \`<area>.<verb>\` in lower-case letters, digits and \`_\` (got ${JSON.stringify(kind)})`,
    );
  return {
    workspaceId,
    actor: boundedText(`${prefix}actor`, req.actor, 300, true),
    kind,
    subject: boundedText(`${prefix}subject`, req.subject, 200),
    details: detailsOf(req.detailsJson, `${prefix}details_json`),
    at: atOf(req.at, `${prefix}at`),
    sourceKey: boundedText(`${prefix}source_key`, req.sourceKey, 100) || undefined,
  };
}

export function auditEventProto(r: AuditRow): MessageInitShape<typeof AuditEventSchema> {
  return {
    seq: BigInt(r.seq),
    at: r.at.toISOString(),
    actor: r.actor,
    kind: r.kind,
    subject: r.subject,
    detailsJson: JSON.stringify(r.details),
    prevHash: r.prev_hash,
    hash: r.hash,
    sourceKey: r.source_key ?? '',
  };
}

export function auditHandlers(pool: Pool): ServiceImpl<typeof AuditService> {
  return {
    async appendAuditEvent(req, ctx) {
      const p = principalOf(ctx);
      const event = eventOf(p.workspaceId, req, '');
      const [row] = await inTransaction(pool, (tx) => appendChainedAuditEvents(tx, p.workspaceId, [event]));
      if (!row) throw new Error('an audit event was not appended');
      return { event: auditEventProto(row) };
    },

    async appendAuditEvents(req, ctx) {
      const p = principalOf(ctx);
      const events = req.events.map((e, i) => eventOf(p.workspaceId, e, `events[${i}].`));
      const rows = await inTransaction(pool, (tx) => appendChainedAuditEvents(tx, p.workspaceId, events));
      return { events: rows.map(auditEventProto) };
    },

    async listAuditEvents(req, ctx) {
      const p = principalOf(ctx);
      if (req.afterSeq !== undefined && req.beforeSeq !== 0n)
        throw new InvalidArgumentError('`after_seq` is not given with `before_seq`');
      for (const [i, a] of req.actorPrefixes.entries()) boundedText(`actor_prefixes[${i}]`, a, 300, true);
      for (const [i, t] of req.textSubjects.entries()) boundedText(`text_subjects[${i}]`, t, 200, true);
      const rows = await listAuditEvents(pool, {
        workspaceId: p.workspaceId,
        beforeSeq: req.beforeSeq === 0n ? undefined : req.beforeSeq,
        afterSeq: req.afterSeq,
        accountId: boundedText('account_id', req.accountId, 36),
        actorPrefixes: req.actorPrefixes,
        text: boundedText('text', req.text, 200),
        sourcePrefix: boundedText('source_prefix', req.sourcePrefix, 20),
        textSubjects: req.textSubjects,
        limit: req.limit,
      });
      const last = rows.at(-1);
      return {
        events: rows.map(auditEventProto),
        nextSeq: rows.length === req.limit && last ? BigInt(last.seq) : 0n,
      };
    },

    async verifyAuditChain(req, ctx) {
      const p = principalOf(ctx);
      const report = await checkAuditChain(pool, p.workspaceId, req.whole);
      const b = report.broken;
      return {
        ok: b === undefined,
        rows: BigInt(report.rows),
        brokenSeq: b?.seq ?? 0n,
        brokenAt: b?.at?.toISOString() ?? '',
        brokenKind: b?.kind ?? '',
        reason: b?.reason ?? '',
        wholeCheckedAt: report.wholeCheckedAt?.toISOString() ?? '',
        wholeRows: BigInt(report.wholeRows ?? 0),
      };
    },
  };
}
