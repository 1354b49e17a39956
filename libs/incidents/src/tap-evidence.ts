import type { AccessCheck, ScopeFields } from '@tapyard/auth';

/** How a tap script change came about (the tap routes and AI authoring operations). */
export type TapScriptOrigin = 'save' | 'generate' | 'fix' | 'review' | 'optimize' | 'migrate';

/** One stored script of a tap: its object key and its number among the tap's stored versions (from 1). */
export interface TapScriptVersion {
  scriptPath: string;
  version: number;
  /**
   * The rights its code acts with in evidence runs (its author's grant; none for a model's), narrowed
   * to whoever runs them. Kept with the incident, never answered. Absent in incidents opened before it
   * was recorded: such a version runs with none.
   */
  grant?: string[];
}

/** A tap script change (what a tap incident is opened for): the live script before it, and the new one. */
export interface TapScriptChange {
  environment: string;
  tap: string;
  before: TapScriptVersion;
  after: TapScriptVersion;
  origin: TapScriptOrigin;
  /** Who made the change: the evidence runs with no more than their rights (see TapEvidenceSource.sample). */
  access: AccessCheck;
}

/** A real run of a tap that loaded its records (what a tap incident's `real` profile is made of). */
export interface TapRan {
  environment: string;
  tap: string;
  /** The stored script the run executed. */
  scriptPath: string;
  runId: string;
  recordCount: number;
  durationMs: number;
}

/** One run of a tap script in the sandbox, nothing loaded: its record count and the records kept. */
export interface TapSampleRun {
  recordCount: number;
  /** The first records the run produced (a bounded sample), as rows. */
  rows: Record<string, unknown>[];
  error: string | null;
  durationMs: number;
}

/** The tap as incidents see it: its scope (for capability checks) and the pipeline it feeds. */
export interface TapSubject {
  scope: ScopeFields;
  targetPipeline: string | null;
}

/**
 * What incidents need from taps, registered by the taps lib at boot (incidents do not depend on taps,
 * whose ingestion path depends on incidents).
 */
export interface TapEvidenceSource {
  /** null: no such tap. */
  subject(environment: string, tap: string): Promise<TapSubject | null>;
  /** The text of a stored script version of the tap, or null when it is gone. */
  script(environment: string, tap: string, scriptPath: string): Promise<string | null>;
  /**
   * Runs a script of the tap in test mode (nothing loaded), its run key holding `grant` narrowed to
   * `access`'s rights; refused (the refusal as the run's error) when `access` may not run new code of
   * this tap.
   */
  sample(
    environment: string,
    tap: string,
    script: string,
    grant: readonly string[],
    access: AccessCheck,
  ): Promise<TapSampleRun>;
  /** Record counts of the tap's last successful real runs, newest first: its last output. */
  lastOutputs(environment: string, tap: string): Promise<number[]>;
  /** Names of the taps feeding a pipeline. */
  feeding(environment: string, pipeline: string): Promise<string[]>;
}
