/**
 * `Idempotency-Key` for the platform's mutations (after draft-ietf-httpapi-idempotency-key-header):
 * the first request with a key is applied and recorded in the ledger together with its response,
 * in one transaction; a retry with the same key and the same request replays that response
 * without applying anything again; the same key with a different request is refused with 422.
 * Concurrent requests with one key wait for each other instead of both applying.
 */
import { inTransaction, type Pool, type PoolClient } from '@adsmcp/runtime/db';
import { invalidRequest, PlatformHttpError } from './errors.ts';
import { findLedgerEntryByKey, insertLedgerEntry, lockIdempotencyKey } from './store/ledger-store.ts';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** The `field` of a 400 for a malformed key. */
const IDEMPOTENCY_KEY_FIELD = 'Idempotency-Key';
/** The response header that marks a replayed response. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/** 1 to 255 visible ASCII characters. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface MutationRequest {
  accountId: string;
  /** The request's `Idempotency-Key`; a mutation without one is applied and recorded every time. */
  idempotencyKey: string | undefined;
  method: string;
  path: string;
  body: unknown;
}

export interface MutationResponse {
  status: number;
  body: unknown;
}

export interface MutationOutcome extends MutationResponse {
  /** True when this is the stored response of an earlier request with the same key. */
  replayed: boolean;
  /** The ledger entry that recorded the mutation. */
  ledgerId: number;
}

/**
 * applyMutation runs `execute` (the mutation, on the transaction's client) at most once per
 * idempotency key of the account and records it in the ledger in the same transaction. When
 * `execute` throws, nothing is recorded and the key stays unused, so the client may retry.
 * Throws a 400 `invalid_request` PlatformHttpError for a malformed key and a 422 one for a key reused with a
 * different method, path or body.
 */
export async function applyMutation(
  pool: Pool,
  request: MutationRequest,
  execute: (client: PoolClient) => Promise<MutationResponse>,
): Promise<MutationOutcome> {
  const key = request.idempotencyKey;
  if (key !== undefined && !KEY_PATTERN.test(key)) {
    throw invalidRequest(IDEMPOTENCY_KEY_FIELD, 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  }
  return inTransaction(pool, async (client) => {
    if (key !== undefined) {
      await lockIdempotencyKey(client, request.accountId, key);
      const found = await findLedgerEntryByKey(client, request.accountId, key, request.body);
      if (found !== undefined) {
        const { entry, sameBody } = found;
        if (!sameBody || entry.method !== request.method || entry.path !== request.path) {
          throw new PlatformHttpError(
            422,
            'idempotency_key_reused',
            `Idempotency-Key "${key}" was already used for ${entry.method} ${entry.path} with a different request; use a new key for a different request`,
          );
        }
        return {
          status: entry.responseStatus,
          body: entry.responseBody,
          replayed: true,
          ledgerId: entry.id,
        };
      }
    }
    const response = await execute(client);
    const entry = await insertLedgerEntry(client, {
      accountId: request.accountId,
      method: request.method,
      path: request.path,
      idempotencyKey: key,
      requestBody: request.body,
      responseStatus: response.status,
      responseBody: response.body,
    });
    // The stored response, so the first answer and every replay are byte for byte the same JSON.
    return { status: entry.responseStatus, body: entry.responseBody, replayed: false, ledgerId: entry.id };
  });
}
