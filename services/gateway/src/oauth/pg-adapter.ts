/** oidc-provider's storage adapter on the gateway's PostgreSQL schema (one instance per model kind). */
import type { Queryable } from '@adsmcp/runtime/db';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import {
  consumePayload,
  destroyByGrant,
  destroyPayload,
  findPayload,
  findPayloadByUid,
  findPayloadByUserCode,
  upsertPayload,
} from './oauth-store.ts';

/** pgAdapter returns the adapter class oidc-provider instantiates with each model's name. */
export function pgAdapter(db: Queryable): new (kind: string) => Adapter {
  return class PgAdapter implements Adapter {
    constructor(private readonly kind: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      const expiresInSeconds = Number.isFinite(expiresIn) && expiresIn > 0 ? Math.ceil(expiresIn) : undefined;
      await upsertPayload(db, { kind: this.kind, id, payload: { ...payload }, expiresInSeconds });
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      return (await findPayload(db, this.kind, id)) as AdapterPayload | undefined;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return (await findPayloadByUid(db, this.kind, uid)) as AdapterPayload | undefined;
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return (await findPayloadByUserCode(db, this.kind, userCode)) as AdapterPayload | undefined;
    }

    async consume(id: string): Promise<void> {
      await consumePayload(db, this.kind, id);
    }

    async destroy(id: string): Promise<void> {
      await destroyPayload(db, this.kind, id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await destroyByGrant(db, this.kind, grantId);
    }
  };
}
