import { fixBlocked, optimiseBlocked, outcomeOf, reviewBlocked, type FlowState } from './tap-authoring-flow';

const SCRIPT = 'def fetch():\n    yield {"id": 1}\n';
const REWRITE = 'def fetch():\n    yield from [{"id": 1}]\n';
const tested = (script: string, error: string | null = null, recordCount = 1): FlowState['lastTest'] => ({
  script,
  recordCount,
  durationMs: 40,
  logs: '',
  error,
  aiExplanation: null,
});

describe('the AI authoring flow (spec rule 5 and the optimise regression guard)', () => {
  it('reviews only a tested script, the very one in the editor, whose test worked', () => {
    expect(reviewBlocked({ script: SCRIPT, lastTest: null, lastReview: null })).toContain(
      'Test this script first',
    );
    expect(reviewBlocked({ script: REWRITE, lastTest: tested(SCRIPT), lastReview: null })).toContain(
      'Test this script first',
    );
    expect(reviewBlocked({ script: SCRIPT, lastTest: tested(SCRIPT, 'boom'), lastReview: null })).toContain(
      'Fix with AI',
    );
    expect(reviewBlocked({ script: SCRIPT, lastTest: tested(SCRIPT), lastReview: null })).toBeNull();
  });

  it('optimises only after a review that changed nothing; a rewriting review means re-test first', () => {
    const base = { script: SCRIPT, lastTest: tested(SCRIPT) };
    expect(optimiseBlocked({ ...base, lastReview: null })).toContain('Review this script first');
    expect(optimiseBlocked({ ...base, lastReview: { script: SCRIPT, rewritten: false } })).toBeNull();
    // The review rewrote SCRIPT into REWRITE, saved: the editor holds REWRITE, tested or not.
    const after = { script: REWRITE, lastReview: { script: SCRIPT, rewritten: true } };
    expect(optimiseBlocked({ ...after, lastTest: tested(SCRIPT) })).toContain('Test this script first');
    expect(optimiseBlocked({ ...after, lastTest: tested(REWRITE) })).toContain('re-test and review again');
    expect(
      optimiseBlocked({
        script: REWRITE,
        lastTest: tested(REWRITE),
        lastReview: { script: REWRITE, rewritten: false },
      }),
    ).toBeNull();
  });

  it('offers Fix for a failed or empty test of the script in the editor only', () => {
    expect(fixBlocked({ script: SCRIPT, lastTest: tested(SCRIPT), lastReview: null })).toContain(
      'nothing to fix',
    );
    expect(fixBlocked({ script: SCRIPT, lastTest: tested(SCRIPT, 'boom'), lastReview: null })).toBeNull();
    expect(fixBlocked({ script: SCRIPT, lastTest: tested(SCRIPT, null, 0), lastReview: null })).toBeNull();
    expect(fixBlocked({ script: '', lastTest: null, lastReview: null })).toContain('Write or generate');
  });

  it('tells a proposal to look at from an unchanged answer and a reverted optimisation', () => {
    const path = 'tap-scripts/t_2.py';
    expect(outcomeOf('generate', SCRIPT, { script: REWRITE, scriptPath: path }).kind).toBe('proposal');
    expect(outcomeOf('review', SCRIPT, { script: SCRIPT, scriptPath: path, rewritten: false }).kind).toBe(
      'unchanged',
    );
    const review = outcomeOf('review', SCRIPT, { script: REWRITE, scriptPath: path, rewritten: true });
    expect(review).toMatchObject({
      kind: 'proposal',
      note: expect.stringContaining('test it again before optimising'),
    });
    expect(outcomeOf('optimize', SCRIPT, { script: SCRIPT, scriptPath: path, changes: [] }).kind).toBe(
      'unchanged',
    );
    const reverted = outcomeOf('optimize', SCRIPT, {
      script: SCRIPT,
      scriptPath: path,
      changes: [],
      verification: {
        originalMs: 100,
        optimizedMs: 1300,
        kept: 'original',
        reason: 'the optimised script ran 1200 % slower',
      },
    });
    expect(reverted).toMatchObject({ kind: 'reverted', note: expect.stringContaining('1200 % slower') });
    expect(reverted.note).toContain('original 100 ms, rewrite 1300 ms');
    const kept = outcomeOf('optimize', SCRIPT, {
      script: REWRITE,
      scriptPath: path,
      changes: ['one pass'],
      verification: {
        originalMs: 100,
        optimizedMs: 90,
        kept: 'optimized',
        reason: 'not slower than the 20 % guard',
      },
    });
    expect(kept).toMatchObject({
      kind: 'proposal',
      note: expect.stringContaining('original 100 ms, rewrite 90 ms'),
    });
  });
});
