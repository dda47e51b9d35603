/**
 * envPairs reads the environment variable `variable` as `name=value` pairs separated by spaces
 * (unset or empty: none); a word without a name before its `=` is refused, naming the variable.
 */
export function envPairs(variable: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const pair of (process.env[variable] ?? '').split(/\s+/).filter(Boolean)) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`${variable} must be name=value pairs separated by spaces (got "${pair}")`);
    pairs[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return pairs;
}
