/**
 * The AI authoring flow's rules (spec "Rules for taps" 5 and the optimise regression guard), as the console
 * applies them: review reads the logs of a test of the very script in the editor; a review that rewrote the
 * script means re-test (and review again) before any optimise; optimise runs with the server's `verify`, which
 * re-tests both versions and reverts the rewrite when it is 20 % slower or more. Every rewrite is shown as a
 * diff and saved only when the person says so.
 */

/** What the console remembers of the last test: which script it ran and what it saw. */
export interface TestFacts {
  script: string;
  recordCount: number;
  durationMs: number;
  logs: string;
  error: string | null;
  /** The model's diagnosis of a failed or empty test (`aiExplanation`), handed to Fix. */
  aiExplanation: string | null;
}

/** The last review of a script and whether it rewrote it. */
export interface ReviewFacts {
  script: string;
  rewritten: boolean;
}

export interface FlowState {
  /** The script in the editor now. */
  script: string;
  lastTest: TestFacts | null;
  lastReview: ReviewFacts | null;
}

/** Null when review may run now; otherwise why not, shown beside the disabled button. */
export function reviewBlocked(s: FlowState): string | null {
  if (s.script.trim() === '') return 'Write or generate a script first.';
  if (!s.lastTest || s.lastTest.script !== s.script)
    return 'Test this script first: the review reads the logs of its test run.';
  if (s.lastTest.error) return 'The test failed: fix the script (Fix with AI) before a review.';
  return null;
}

/** Null when optimise may run now; otherwise why not (spec rule 5: review first, never in a rewriting pass). */
export function optimiseBlocked(s: FlowState): string | null {
  const review = reviewBlocked(s);
  if (review) return review;
  if (s.lastReview?.script === s.script && !s.lastReview.rewritten) return null;
  return s.lastReview?.rewritten
    ? 'The review rewrote the script: save it, re-test and review again before optimising.'
    : 'Review this script first: optimise runs only after a review that changed nothing.';
}

/** Null when Fix may run: it needs a failed (or empty) test of the script in the editor, whose error it reads. */
export function fixBlocked(s: FlowState): string | null {
  if (s.script.trim() === '') return 'Write or generate a script first.';
  if (!s.lastTest || s.lastTest.script !== s.script)
    return 'Test this script first: Fix reads its error and logs.';
  if (!s.lastTest.error && s.lastTest.recordCount > 0) return 'The last test worked: nothing to fix.';
  return null;
}

export interface Verification {
  originalMs: number;
  optimizedMs: number;
  kept: string;
  reason: string;
}

export interface RewriteAnswer {
  script: string;
  scriptPath: string;
  changes?: string[];
  rewritten?: boolean;
  verification?: Verification;
}

export type Outcome =
  /** A new version to look at (the diff) and save or discard. */
  | { kind: 'proposal'; note: string }
  /** Nothing changed: no new version, nothing to re-test. */
  | { kind: 'unchanged'; note: string }
  /** The optimiser's rewrite was tested against the original and reverted by the regression guard. */
  | { kind: 'reverted'; note: string };

/** What an AI answer means for the person, from the fields the API returns. */
export function outcomeOf(
  action: 'generate' | 'fix' | 'review' | 'optimize',
  before: string,
  answer: RewriteAnswer,
): Outcome {
  if (action === 'review' && answer.rewritten === false)
    return {
      kind: 'unchanged',
      note: 'The review found no signal in the logs: the script stays as it is. You may optimise it now.',
    };
  if (action === 'optimize') {
    const v = answer.verification;
    if (v && v.kept === 'original')
      return {
        kind: 'reverted',
        note:
          `Reverted: ${v.reason} (original ${v.originalMs} ms, rewrite ${v.optimizedMs} ms). ` +
          'The regression guard keeps the original when the rewrite is 20 % slower or more, fails or returns fewer records.',
      };
    if ((answer.changes ?? []).length === 0)
      return {
        kind: 'unchanged',
        note: 'The optimiser changed nothing: the script stays, no re-test needed.',
      };
    const timing = v
      ? ` Re-tested: original ${v.originalMs} ms, rewrite ${v.optimizedMs} ms (${v.reason}).`
      : '';
    return { kind: 'proposal', note: `Optimised.${timing} Look at the diff, then save it or discard it.` };
  }
  if (answer.script === before)
    return { kind: 'unchanged', note: 'The model returned the same script: nothing to save.' };
  const then =
    action === 'review'
      ? ' Save it, then test it again before optimising (spec rule 5).'
      : ' Save it, then test it.';
  return { kind: 'proposal', note: `A new version (${answer.scriptPath}).${then}` };
}
