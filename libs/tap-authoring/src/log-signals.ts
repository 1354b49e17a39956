/** What in a run's logs calls for a review (spec: review rewrites only "with a signal in the logs"). */
const SIGNALS: [string, RegExp][] = [
  ['a Python traceback', /Traceback \(most recent call last\)/],
  ['error lines', /\b(ERROR|CRITICAL|FATAL)\b|\b\w*(Error|Exception):/],
  ['warnings', /\bWARN(ING)?\b|\w+Warning:/],
  ['rate limiting', /\b429\b|too many requests|rate[ -]?limit/i],
  [
    'server errors',
    /\b(50[0-4])\b.*\b(error|status|server|gateway|unavailable)\b|\b(error|status|server)\b.*\b(50[0-4])\b/i,
  ],
  ['timeouts', /timed? ?out\b|timeout/i],
  ['retries', /\bretry(ing)?\b|\bretries\b/i],
  ['deprecations', /deprecat/i],
];

export interface LogSignals {
  /** Which kinds of signal were found. */
  kinds: string[];
  /** The lines that showed them (at most 40), for the model. */
  lines: string[];
}

export function logSignals(logs: string, recordCount: number): LogSignals {
  const kinds = new Set<string>();
  const lines: string[] = [];
  for (const line of logs.split('\n')) {
    if (line.length > 2000) continue; // a data dump, not a log line
    let hit = false;
    for (const [kind, re] of SIGNALS) {
      if (re.test(line)) {
        kinds.add(kind);
        hit = true;
      }
    }
    if (hit && lines.length < 40) lines.push(line.slice(0, 500));
  }
  if (recordCount === 0) kinds.add('no records');
  return { kinds: [...kinds], lines };
}
