import { NotFoundError, ValidationError } from '@tapyard/core';
import { SecretsService } from '@tapyard/secrets';
import { TapConfig, TapsRepository, TapType, assertTapSecret, isScriptOf } from '@tapyard/taps';
import type { ChangesResult, ReviewInput } from './tap-authoring.types';

/** Where the tap's authoring context comes from: the stored tap, overridden by the request. */
export interface TapContext {
  tapName: string;
  tapType: TapType;
  stored: TapConfig | null;
  secretName: string | null;
  secretFields: Record<string, string>;
  packages: string[];
}

/** Builds a request's TapContext from the stored tap and its secret. */
export class TapContexts {
  constructor(
    private readonly repo: TapsRepository,
    private readonly secrets: SecretsService,
  ) {}

  async load(env: string, tapName: string, secretName?: string, tapType?: TapType): Promise<TapContext> {
    const stored = await this.repo.find(env, tapName);
    if (stored && tapType && stored.tapType !== tapType) {
      throw new ValidationError(`tap '${tapName}' is a ${stored.tapType} tap, not ${tapType}`, [
        { field: 'tapType', problem: `is ${stored.tapType} and cannot change` },
      ]);
    }
    const secret = secretName?.trim() || stored?.secretName || null;
    let secretFields: Record<string, string> = {};
    if (secret) {
      assertTapSecret(secret);
      try {
        secretFields = await this.secrets.reveal(env, secret);
      } catch (err) {
        if (err instanceof NotFoundError) {
          throw new ValidationError(`secret '${secret}' does not exist`, [
            { field: 'secretName', problem: 'does not exist' },
          ]);
        }
        throw err;
      }
    }
    return {
      tapName,
      tapType: tapType ?? stored?.tapType ?? 'structured',
      stored,
      secretName: secret,
      secretFields,
      packages: stored?.packages ?? [],
    };
  }
}

/** The old script a request names must be one of the tap's own. */
export function assertOldPath(tapName: string, oldScriptPath?: string): void {
  const p = oldScriptPath?.trim();
  if (p && !isScriptOf(tapName, p)) {
    throw new ValidationError(`oldScriptPath must be one of the scripts of tap '${tapName}'`, [
      { field: 'oldScriptPath', problem: 'is not a script of this tap' },
    ]);
  }
}

/** Review/optimise without a rewrite: the input script and path (spec rule 5). */
export function unchanged(ctx: TapContext, input: ReviewInput): ChangesResult {
  return {
    script: input.script,
    packages: ctx.packages,
    scriptPath: input.oldScriptPath ?? ctx.stored?.scriptPath ?? '',
    changes: [],
  };
}
