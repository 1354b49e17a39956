import { Injectable, OnModuleInit } from '@nestjs/common';
import { AccessCheck, heldOf } from '@tapyard/auth';
import { errorMessage } from '@tapyard/core';
import { IncidentsService, TapEvidenceSource, TapSampleRun, TapSubject } from '@tapyard/incidents';
import { TapPolicy } from './tap-policy';
import { TapRunner } from './tap-runner.service';
import { UNLIMITED } from './tap-grants';
import { TapsRepository } from './taps.repository';
import { TapsService } from './taps.service';
import { tapScope } from './tap-scope';

/** Last real runs a tap's evidence compares with, as a pipeline's does with its last jobs. */
const LAST_OUTPUTS = 10;

/** Lends incidents what they need of taps: scopes, stored scripts, test runs and recent outputs. */
@Injectable()
export class TapIncidentSource implements TapEvidenceSource, OnModuleInit {
  constructor(
    private readonly incidents: IncidentsService,
    private readonly taps: TapsService,
    private readonly runner: TapRunner,
    private readonly repo: TapsRepository,
    private readonly policy: TapPolicy,
  ) {}

  onModuleInit(): void {
    this.incidents.provideTaps(this);
  }

  async subject(environment: string, name: string): Promise<TapSubject | null> {
    const tap = await this.repo.find(environment, name);
    return tap && { scope: tapScope(tap), targetPipeline: tap.targetPipeline || null };
  }

  script(environment: string, _tap: string, scriptPath: string): Promise<string | null> {
    return this.taps.readScript(environment, scriptPath);
  }

  /**
   * As the caller could test the script itself (an optimisation's verification): `tap:run` on the tap,
   * `secret:use` when it has a secret; the run key holds the version's grant, never more than the
   * caller holds.
   */
  async sample(
    environment: string,
    name: string,
    script: string,
    grant: readonly string[],
    access: AccessCheck,
  ): Promise<TapSampleRun> {
    const started = Date.now();
    const tap = await this.taps.get(environment, name);
    try {
      this.policy.assertMayVerify(access, tap);
    } catch (err) {
      return { recordCount: 0, rows: [], error: errorMessage(err), durationMs: Date.now() - started };
    }
    const caller = access.caller;
    const rights = caller ? heldOf(grant, caller.ability) : UNLIMITED;
    const r = await this.runner.test(environment, tap, script, 0, rights, caller);
    return {
      recordCount: r.recordCount,
      rows: r.records.filter(
        (x): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x),
      ),
      error: r.error,
      durationMs: r.durationMs,
    };
  }

  async lastOutputs(environment: string, tap: string): Promise<number[]> {
    return (await this.repo.runs(environment, tap))
      .filter((r) => r.mode === 'run' && r.status === 'success' && r.persisted)
      .slice(0, LAST_OUTPUTS)
      .map((r) => r.recordCount);
  }

  async feeding(environment: string, pipeline: string): Promise<string[]> {
    return (await this.repo.targeting(environment, pipeline)).map((t) => t.name);
  }
}
