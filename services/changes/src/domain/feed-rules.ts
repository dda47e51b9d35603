/**
 * A product feed: the only change to one is archiving it, which the planner checks against its
 * live status (archiving an archived feed would change nothing). Archiving leaves the ad groups
 * that use the feed alone; the platform reports it as their serving issue.
 */

/** checkFeed: no create or update of a feed is planned, so nothing in its body needs checking. */
export function checkFeed(): void {}
