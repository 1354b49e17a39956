/**
 * The console hides or disables what the caller's capabilities refuse, with the reason, before the API
 * would answer 403. The API stays the judge (a scoped capability may still be refused for one container);
 * this only reads the list `GET /auth/me` returns: `resource:action[:scope]`, `*` for any resource or action.
 */
export function holds(capabilities: readonly string[], needed: string): boolean {
  const [resource, action] = needed.split(':');
  return capabilities.some((held) => {
    const [r, a] = held.split(':');
    return (r === '*' || r === resource) && (a === '*' || a === action);
  });
}

/** Null when the caller may try; otherwise the sentence shown beside the disabled control. */
export function refusal(capabilities: readonly string[], needed: string, who: string): string | null {
  return holds(capabilities, needed) ? null : `${who} lacks the capability ${needed}.`;
}
