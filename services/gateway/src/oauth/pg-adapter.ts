/** oidc-provider's storage adapter on the gateway's PostgreSQL schema (one instance per model kind). */
import type { Queryable } from '@adsmcp/runtime/db';
import { type Adapter, type AdapterPayload, errors } from 'oidc-provider';
import {
  consumePayload,
  destroyByGrant,
  destroyPayload,
  findPayload,
  findPayloadByUid,
  findPayloadByUserCode,
  upsertPayload,
} from './oauth-store.ts';

const NUL = '\u0000';

/** A lone surrogate: half of a UTF-16 pair without its other half, not a character of any text. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What in `text` PostgreSQL's text and jsonb cannot hold, in words, or undefined. */
function unstorable(text: string): string | undefined {
  if (text.includes(NUL)) return 'must not contain the character U+0000 (NUL)';
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (it holds a lone surrogate)';
  return undefined;
}

/**
 * Where `value` holds a string that can never be stored (U+0000, or a lone surrogate, which
 * PostgreSQL's text and jsonb cannot hold), as a dotted path (e.g. `params.state`) and the rule
 * it breaks, or undefined.
 */
export function unstorablePath(value: unknown, path = ''): { path: string; rule: string } | undefined {
  if (typeof value === 'string') {
    const rule = unstorable(value);
    return rule === undefined ? undefined : { path, rule };
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = unstorablePath(item, `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const at = path ? `${path}.${key}` : key;
      const rule = unstorable(key);
      if (rule !== undefined) return { path: at, rule };
      const found = unstorablePath(item, at);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** pgAdapter returns the adapter class oidc-provider instantiates with each model's name. */
export function pgAdapter(db: Queryable): new (kind: string) => Adapter {
  return class PgAdapter implements Adapter {
    constructor(private readonly kind: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      // A request parameter with U+0000 (an authorization request's state, say) would otherwise
      // fail in the database as a server error: the client is told which one instead.
      const where = unstorablePath(payload);
      if (where !== undefined) {
        throw new errors.InvalidRequest(`${where.path.replace(/^params\./, '')} ${where.rule}`);
      }
      const expiresInSeconds = Number.isFinite(expiresIn) && expiresIn > 0 ? Math.ceil(expiresIn) : undefined;
      await upsertPayload(db, { kind: this.kind, id, payload: { ...payload }, expiresInSeconds });
    }

    // No stored id or code holds U+0000, which PostgreSQL cannot take: a lookup by one finds
    // nothing (a token, code or client_id sent with it is then refused as unknown).
    async find(id: string): Promise<AdapterPayload | undefined> {
      if (id.includes(NUL)) return undefined;
      return (await findPayload(db, this.kind, id)) as AdapterPayload | undefined;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      if (uid.includes(NUL)) return undefined;
      return (await findPayloadByUid(db, this.kind, uid)) as AdapterPayload | undefined;
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      if (userCode.includes(NUL)) return undefined;
      return (await findPayloadByUserCode(db, this.kind, userCode)) as AdapterPayload | undefined;
    }

    async consume(id: string): Promise<void> {
      if (id.includes(NUL)) return;
      await consumePayload(db, this.kind, id);
    }

    async destroy(id: string): Promise<void> {
      if (id.includes(NUL)) return;
      await destroyPayload(db, this.kind, id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      if (grantId.includes(NUL)) return;
      await destroyByGrant(db, this.kind, grantId);
    }
  };
}
