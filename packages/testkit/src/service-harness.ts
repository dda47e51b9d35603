/**
 * One Connect service in-process for its integration tests: a fresh database with the service's
 * migrations applied, the service listening on an ephemeral loopback port, a key pair to sign
 * calls as the gateway does, a client that signs each call for the principal in its options, and
 * one that sends no principal at all.
 */

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ConnectServer } from '@adsmcp/runtime/connect-server';
import { createPool, type Migration, migrate, type Pool } from '@adsmcp/runtime/db';
import { createLogger, type Logger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  GATEWAY_ISSUER,
  generatePrincipalKeys,
  type Principal,
  type PrincipalSigner,
  type PrincipalVerifier,
} from '@adsmcp/runtime/principal';
import { callerKey, createServiceClient } from '@adsmcp/runtime/service-client';
import type { DescService } from '@bufbuild/protobuf';
import {
  type CallOptions,
  type Client,
  Code,
  ConnectError,
  createClient,
  createContextValues,
} from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { stopTestServer, testDatabase } from './postgres.ts';

/** A principal in a new workspace: an admin with read and write scopes over MCP unless overridden. */
export function testPrincipal(overrides: Partial<Principal> = {}): Principal {
  return {
    workspaceId: randomUUID(),
    credentialId: randomUUID(),
    userId: randomUUID(),
    role: 'admin',
    scopes: ['read', 'write'],
    via: 'mcp',
    ...overrides,
  };
}

/** Call options that make a call on behalf of `principal`. */
export function as(principal: Principal): CallOptions {
  return { contextValues: createContextValues().set(callerKey, principal) };
}

export interface ServiceUnderTest<S extends DescService> {
  /** The service's base URL (HTTP/2 cleartext). */
  url: string;
  /** The service's own pool, on its schema. */
  pool: Pool;
  /** Signs each call for the principal in its call options (see `as`). */
  client: Client<S>;
  /** Sends no principal token at all. */
  anonymous: Client<S>;
  /**
   * A client of another service the same server serves, signing as the gateway or as one of the
   * `peers` the harness was started with.
   */
  clientOf<T extends DescService>(service: T, issuer?: string): Client<T>;
  as(principal: Principal): CallOptions;
  stop(): Promise<void>;
}

export interface ServiceHarnessOptions<S extends DescService> {
  service: S;
  /** The service's name: its schema and the principal tokens' audience. */
  name: string;
  migrations: string | readonly Migration[];
  /** More set-up on the migrated pool (the bus's tables, for one). */
  prepare?: (pool: Pool) => Promise<unknown>;
  /** Issuers besides the gateway whose tokens the service accepts (each gets a key pair here). */
  peers?: readonly string[];
  build: (deps: { pool: Pool; verifier: PrincipalVerifier; logger: Logger }) => ConnectServer;
}

export async function startServiceUnderTest<S extends DescService>(
  o: ServiceHarnessOptions<S>,
): Promise<ServiceUnderTest<S>> {
  const db = await testDatabase();
  const pool = createPool(db.url, o.name);
  await migrate(pool, o.name, o.migrations);
  await o.prepare?.(pool);
  const keys = new Map<string, string>();
  const publicKeys: Record<string, string> = {};
  for (const issuer of [GATEWAY_ISSUER, ...(o.peers ?? [])]) {
    const pair = await generatePrincipalKeys();
    keys.set(issuer, pair.privateKeyPem);
    publicKeys[issuer] = pair.publicKeyPem;
  }
  const signers = new Map<string, PrincipalSigner>();
  const signerOf = async (issuer: string): Promise<PrincipalSigner> => {
    const pem = keys.get(issuer);
    if (pem === undefined) throw new Error(`the harness was not started with peer ${issuer}`);
    let signer = signers.get(issuer);
    if (signer === undefined) {
      signer = await createPrincipalSigner(pem, issuer);
      signers.set(issuer, signer);
    }
    return signer;
  };
  for (const issuer of keys.keys()) await signerOf(issuer);
  const server = o.build({
    pool,
    verifier: await createPrincipalVerifier(publicKeys, o.name),
    logger: createLogger(o.name, 'silent'),
  });
  const url = `http://127.0.0.1:${await server.listen(0)}`;
  const clientOf = <T extends DescService>(service: T, issuer: string = GATEWAY_ISSUER): Client<T> => {
    const signer = signers.get(issuer);
    if (signer === undefined) throw new Error(`the harness was not started with peer ${issuer}`);
    return createServiceClient(service, url, o.name, signer);
  };
  return {
    url,
    pool,
    client: clientOf(o.service),
    clientOf,
    anonymous: createClient(o.service, createGrpcTransport({ baseUrl: url })),
    as,
    async stop() {
      await server.close(1000);
      await pool.end();
      await db.drop();
      await stopTestServer();
    },
  };
}

/**
 * assertRefused awaits `call` and asserts it was refused with `code` and a message that matches
 * `message` (a pattern), or equals it (a string).
 */
export async function assertRefused(
  call: Promise<unknown>,
  code: Code,
  message: RegExp | string,
): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof ConnectError, String(err));
    assert.equal(Code[err.code], Code[code], err.rawMessage);
    if (typeof message === 'string') assert.equal(err.rawMessage, message);
    else assert.match(err.rawMessage, message);
    return true;
  });
}
