/**
 * The arguments and phrases every ad-platform tool shares, written once: the account, a platform
 * id, a list's cursors, serving issues, and what a list or a prepare tool tells the agent.
 */
import { platformId } from '@adsmcp/runtime/platform-bodies';
import { array, enumOf, integer, string } from '../schema.ts';

export { platformId };

/** How every tool describes its ad account argument. */
export const ACCOUNT_ID_TEXT = 'The ad account: an account_id from ads_list_accounts.';

/** The account a tool acts on: one of the workspace's connections. */
export const accountId = string({ format: 'uuid', description: ACCOUNT_ID_TEXT });

/** The example account of every row's example arguments. */
export const EXAMPLE_ACCOUNT = '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90';

/**
 * A paging cursor as the platform gives it: visible ASCII, so that its length in characters is
 * the length the upstream-proxy allows a query value (a cursor of other characters is no cursor
 * the platform gave, and would be refused there in the proxy's words, not the argument's).
 */
export function cursor(description: string) {
  return string({
    min: 1,
    max: 2048,
    pattern: /^[\x21-\x7e]+$/,
    patternHint: 'a cursor as the platform gives it (visible ASCII characters, no spaces)',
    description,
  });
}

/** The cursor and order arguments of a platform list, with `limit` up to `max`. */
export function listPaging(max: number) {
  return {
    limit: integer({ min: 1, max, description: `Page size, 1 to ${max} (the platform’s default is 25).` }),
    after: cursor('Cursor: the page after this one (a paging.after from an earlier page).'),
    before: cursor('Cursor: the page before this one (a paging.before from an earlier page).'),
    order: enumOf(['asc', 'desc'], 'Sort by creation: asc (oldest first, the default) or desc.'),
  };
}

/** `include: ["serving_issues"]` for a read of `what` ("ad", "ad group"). */
export function servingIssues(what: string) {
  return array(enumOf(['serving_issues']), {
    max: 1,
    unique: true,
    description: `Extra detail to include: serving_issues (why the ${what} is not serving, if it is not).`,
  });
}

/** How to page a list, said once for every list tool. */
export const PAGING_TEXT =
  'To page forward pass paging.after as `after` while paging.has_more is true; to page back pass ' +
  'paging.before as `before` (one cursor at a time).';

/** What happens after a prepare tool, said once for every one. */
export const PREPARE_TEXT =
  'Returns a change_id; nothing reaches the ad account until a person approves the change in the dashboard ' +
  'and ads_apply_change applies it, once, exactly as reviewed.';
