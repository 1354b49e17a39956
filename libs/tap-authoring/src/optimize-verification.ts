import { head } from '@tapyard/ai';
import { TapCaller, TapRunner, TapsService } from '@tapyard/taps';
import type { Answer } from './script-authoring';
import type { TapContext } from './tap-context';
import type { Verification } from './tap-authoring.types';

/** The optimiser is kept unless it runs this much slower (spec Limits, "Optimise regression guard"). */
const REGRESSION_LIMIT = 1.2;

/** Optimise with `verify`: both versions tested, the rewrite kept only when it works and is not much slower. */
export class OptimizeVerifier {
  constructor(
    private readonly taps: TapsService,
    private readonly runner: TapRunner,
  ) {}

  async verify(
    env: string,
    ctx: TapContext,
    original: string,
    optimized: Answer,
    testLimit: number,
    caller: TapCaller | null,
  ): Promise<Verification> {
    const base = this.taps.merge(ctx.stored, { name: ctx.tapName, tapType: ctx.tapType });
    // The original is the caller's text; the rewrite is the model's (see TapRunner.testGrant).
    const a = await this.runner.test(
      env,
      base,
      original,
      testLimit,
      await this.runner.testGrant(env, ctx.tapName, caller, 'caller'),
      caller,
    );
    const b = await this.runner.test(
      env,
      { ...base, packages: optimized.packages },
      optimized.script,
      testLimit,
      await this.runner.testGrant(env, ctx.tapName, caller, 'model'),
      caller,
    );
    const verdict = (kept: Verification['kept'], reason: string): Verification => ({
      originalMs: a.durationMs,
      optimizedMs: b.durationMs,
      kept,
      reason,
    });
    if (b.error) return verdict('original', `the optimised script failed: ${head(b.error, 300)}`);
    if (b.recordCount < a.recordCount) {
      return verdict(
        'original',
        `the optimised script returned ${b.recordCount} records, the original ${a.recordCount}`,
      );
    }
    if (!a.error && b.durationMs >= a.durationMs * REGRESSION_LIMIT) {
      return verdict(
        'original',
        `the optimised script ran ${Math.round((b.durationMs / Math.max(1, a.durationMs) - 1) * 100)} % slower`,
      );
    }
    return verdict(
      'optimized',
      a.error ? 'the original failed; the optimised script works' : 'not slower than the 20 % guard',
    );
  }
}
