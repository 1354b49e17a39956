import { Injectable } from '@nestjs/common';
import { AccessCheck, buildAbility, canOn } from '@tapyard/auth';
import { ValidationError } from '@tapyard/core';
import { PipelineDefinition, isDocumentPipeline } from '@tapyard/model';
import { PipelinePolicy, PipelinesService, pipelineScope } from '@tapyard/pipelines';
import { requireSecretUse } from '@tapyard/secrets';
import { changesCode } from './tap-grants';
import { TapConfig } from './tap.types';
import { TapErrorCode } from './tap-errors';

/**
 * Who may do what with a tap beyond the capability of the entry point (route or assistant tool,
 * checked before the call; the scheduler has none): each rule in one method, called by the service
 * that does the work. Two rules span entry points:
 * - a tap feeds its target pipeline, so whoever saves or runs it may upload there as an upload would
 *   (pipeline:upload, and document:upload on a document pipeline's collection), and the run itself is
 *   bounded by the tap's grant (assertGrantMayFeed);
 * - a secret goes only to code vetted by a holder of secret:use (SecretPolicy's requireSecretUse).
 */
@Injectable()
export class TapPolicy {
  constructor(
    private readonly pipelines: PipelinesService,
    private readonly pipelinePolicy: PipelinePolicy,
  ) {}

  /** Saving `next` over `current`: new code with a secret, and the target it feeds. */
  async assertMaySave(
    access: AccessCheck,
    environment: string,
    current: TapConfig | null,
    next: TapConfig,
    newScript: boolean,
  ): Promise<void> {
    this.assertMayHandSecret(access, current, next, newScript);
    await this.assertMayFeed(access, environment, next.targetPipeline);
  }

  /** Testing a stored tap as it is needs tap:run only (the entry point's); other code with a secret needs more. */
  assertMayTest(access: AccessCheck, stored: TapConfig | null, tap: TapConfig, newScript: boolean): void {
    this.assertMayHandSecret(access, stored, tap, newScript);
  }

  /** A run (not a test) loads into the tap's target. */
  assertMayRun(access: AccessCheck, environment: string, tap: TapConfig): Promise<void> {
    return this.assertMayFeed(access, environment, tap.targetPipeline);
  }

  /** Writing code for a secret prepares handing it over: the same capability as saving a tap with one. */
  assertMayWriteFor(access: AccessCheck, secretName: string | null | undefined): void {
    if (secretName?.trim()) requireSecretUse(access, 'to write code for a secret');
  }

  /** Verifying an optimisation tests the rewrite: tap:run on the tap, and its secret goes to new code. */
  assertMayVerify(access: AccessCheck, stored: TapConfig | null): void {
    access.require(
      'run',
      'tap',
      { catalog: stored?.catalog ?? null, type: stored?.tapType ?? 'structured' },
      'to verify an optimisation by testing it',
    );
    if (stored?.secretName) requireSecretUse(access, "to run new code with the tap's secret");
  }

  /**
   * What a run loads into is bounded by the tap's grant (whoever last changed its code, narrowed to
   * the runner for a manual run): the same feed rule for a scheduled run, which has no caller.
   */
  assertGrantMayFeed(tap: TapConfig, target: PipelineDefinition, grant: string[]): void {
    const ability = buildAbility(grant, `tap:${tap.name}`);
    const refuse = (lacks: string) =>
      new ValidationError(
        `tap '${tap.name}' may not load into pipeline '${tap.targetPipeline}': whoever last changed the tap's ` +
          `code (or started this run) lacks ${lacks}`,
        [{ field: 'targetPipeline', problem: 'is outside the tap grant' }],
      ).coded(TapErrorCode.TargetRefused);
    if (!canOn(ability, 'upload', 'pipeline', pipelineScope(target))) throw refuse('pipeline:upload on it');
    const vs = target.destination.vectorStore;
    if (
      isDocumentPipeline(target) &&
      vs &&
      !canOn(ability, 'upload', 'document', { collection: vs.collection })
    )
      throw refuse(`document:upload for its collection '${vs.collection}'`);
  }

  /** New code, a new secret or new packages hand the tap's secret to code the caller vouches for. */
  private assertMayHandSecret(
    access: AccessCheck,
    current: TapConfig | null,
    next: TapConfig,
    newScript: boolean,
  ): void {
    if (next.secretName && changesCode(current, next, newScript))
      requireSecretUse(access, 'to give a secret to code it changes or runs');
  }

  /**
   * The caller feeds the pipeline, so it needs what an upload there needs (PipelinePolicy): pipeline:upload
   * on it, answered as absent outside the caller's scope, and document:upload on a document pipeline's
   * collection, so a tap is no way around the collection scope.
   */
  private async assertMayFeed(access: AccessCheck, environment: string, pipeline: string): Promise<void> {
    if (!pipeline) return;
    const found = await this.pipelines.find(environment, pipeline);
    if (!found) return; // a structured tap may be saved before its pipeline; a run answers its own 400
    this.pipelinePolicy.assertMayUpload(access, pipeline, found.definition);
  }
}
