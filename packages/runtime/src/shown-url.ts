/**
 * A receiver's URL as a log anyone in the workspace reads may show it: its origin alone. The path
 * and query of many receivers are the credential to post to them (a Slack incoming webhook's
 * `/services/T…/B…/<secret>`, a `?token=`), and a viewer of the audit log must not be able to
 * post into the team's channel. Undefined when `url` is not a URL.
 */
export function shownUrl(url: string): string | undefined {
  if (!URL.canParse(url)) return undefined;
  const u = new URL(url);
  return u.pathname === '/' && u.search === '' && u.hash === '' ? u.origin : `${u.origin}/…`;
}
