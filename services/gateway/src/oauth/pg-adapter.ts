/** oidc-provider's storage adapter on the gateway's PostgreSQL schema (one instance per model kind). */
import type { Queryable } from '@adsmcp/runtime/db';
import { type Adapter, type AdapterPayload, errors } from 'oidc-provider';
import { unstorablePath } from '../storable-text.ts';
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
