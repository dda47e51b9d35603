/**
 * Who acted on a change, in words for people. The changes service records each actor as machine
 * text (`user:<uuid> via mcp (<credential id>)`); the dashboard shows the person's email and the
 * channel instead, never a credential id, and keeps the machine text (less the credential) in a
 * title attribute.
 */
import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import type { Queryable } from '@adsmcp/runtime/db';
import type { Channel } from '@adsmcp/runtime/principal';
import { listUsersByIds } from '../store/identity-store.ts';
import { esc } from './html.ts';

/** Emails of the workspace's users, by user id (lower case). */
export type People = ReadonlyMap<string, string>;

/** An actor as recorded by the changes service, taken apart. */
export interface Actor {
  userId?: string;
  channel?: Channel;
  /** The email an operator command named, when no user id was recorded. */
  operatorEmail?: string;
}

const USER_ACTOR =
  /^user:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) via (mcp|dashboard|operator|worker) \(.*\)$/i;
const CHANNEL_ACTOR = /^(mcp|dashboard|operator|worker):(.*)$/;

/** parseActor reads the changes service's actor text; unknown text gives an empty actor. */
export function parseActor(text: string): Actor {
  const user = USER_ACTOR.exec(text);
  if (user) return { userId: user[1]?.toLowerCase(), channel: user[2] as Channel };
  const channel = CHANNEL_ACTOR.exec(text);
  if (!channel) return {};
  const via = channel[1] as Channel;
  if (via !== 'operator') return { channel: via };
  // An operator command is recorded as `operator:<email>` (or `operator:operator:<email>`).
  const rest = (channel[2] ?? '').replace(/^(operator:)+/, '');
  return /^[^\s@:]+@[^\s@:]+$/.test(rest) ? { channel: via, operatorEmail: rest } : { channel: via };
}

const CHANNEL_WORDS: Record<Channel, { after: string; alone: string }> = {
  mcp: { after: 'through an MCP client', alone: 'An MCP client' },
  dashboard: { after: 'in the dashboard', alone: 'Someone in the dashboard' },
  operator: { after: 'by operator command', alone: 'An operator command' },
  worker: { after: 'by the apply worker', alone: 'The apply worker' },
};

/** actorText says who acted and how, e.g. "alice@x.example, through an MCP client". */
export function actorText(text: string, people: People): string {
  if (text === '') return '';
  const a = parseActor(text);
  const name = a.userId ? (people.get(a.userId) ?? 'a former member of this workspace') : a.operatorEmail;
  if (!a.channel) return name ?? 'someone not recorded';
  const words = CHANNEL_WORDS[a.channel];
  return name ? `${name}, ${words.after}` : words.alone;
}

/**
 * actorHtml is actorText for a page, with the recorded machine text as its title, less the
 * credential it names: a person sees who and how, never a credential id, not even on hover.
 */
export function actorHtml(text: string, people: People): string {
  if (text === '') return '';
  const title = text.replace(/\s*\([^)]*\)\s*$/, '');
  return `<span class="actor" title="${esc(title)}">${esc(actorText(text, people))}</span>`;
}

/** The user ids named by the actors of `changes`. */
export function actorUserIds(changes: readonly Change[]): string[] {
  const ids = new Set<string>();
  for (const c of changes) {
    for (const text of [
      c.preparedBy,
      c.approvedBy,
      c.rejectedBy,
      c.applyRequestedBy,
      c.applyRetriedBy,
      c.resolvedBy,
    ]) {
      const id = parseActor(text ?? '').userId;
      if (id) ids.add(id);
    }
  }
  return [...ids];
}

/** loadPeople resolves every person named by `changes` with a single query. */
export async function loadPeople(
  db: Queryable,
  workspaceId: string,
  changes: readonly Change[],
): Promise<People> {
  const rows = await listUsersByIds(db, workspaceId, actorUserIds(changes));
  return new Map(rows.map((u) => [u.id.toLowerCase(), u.email]));
}
