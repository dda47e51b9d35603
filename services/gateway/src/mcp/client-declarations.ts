/**
 * What a 2025-era client declared in `initialize`, kept per credential: those revisions are served
 * statelessly (no session), so a later tools/call can only learn whether its client takes URL
 * elicitation from the last initialize made with the same credential. A credential is one client's
 * connection; two clients sharing one are told apart by nothing the protocol sends, so the later
 * initialize's declaration holds for both.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { isRecord } from '@adsmcp/runtime/json';
import { declaresUrlElicitation } from './person-in-the-loop.ts';
import { messagesOf } from './rpc-messages.ts';

/** The URL elicitation capability an initialize request of `body` declares, or undefined when it holds none. */
export function initializeDeclaration(body: unknown): boolean | undefined {
  const init = messagesOf(body).find((m) => m.method === 'initialize' && isRecord(m.params));
  if (init === undefined || !isRecord(init.params)) return undefined;
  return declaresUrlElicitation(init.params.capabilities);
}

/** Records what an initialize with `credentialId` declared. */
export async function recordDeclaration(
  db: Queryable,
  credentialId: string,
  urlElicitation: boolean,
): Promise<void> {
  await db.query(
    `INSERT INTO mcp_client_declarations (credential_id, url_elicitation) VALUES ($1, $2)
     ON CONFLICT (credential_id) DO UPDATE SET url_elicitation = $2, declared_at = now()`,
    [credentialId, urlElicitation],
  );
}

/** Whether the last initialize with `credentialId` declared URL elicitation (false when none was recorded). */
export async function declaredUrlElicitation(db: Queryable, credentialId: string): Promise<boolean> {
  const { rows } = await db.query<{ url_elicitation: boolean }>(
    'SELECT url_elicitation FROM mcp_client_declarations WHERE credential_id = $1',
    [credentialId],
  );
  return rows[0]?.url_elicitation === true;
}
