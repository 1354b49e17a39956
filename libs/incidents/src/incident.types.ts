import type { CodegenKind } from '@tapyard/scripts';
import type { Check, EvidenceDiff, RunProfile, Thresholds, Verdict } from './evidence';
import type { TapScriptOrigin, TapScriptVersion } from './tap-evidence';

/** Spec "Incident evidence": `scriptVersions` for pipeline incidents. */
export interface ScriptVersionChange {
  kind: CodegenKind;
  before: number;
  after: number;
}

export interface BlastRadius {
  downstreamPipelines: string[];
  downstreamDatasets: { kind: string; coords: string }[];
  ucTables: string[];
  consumersFromContracts: string[];
  lastDownstreamRunAt: string;
  agentsThatQueriedLast7d: string[];
  secretName: string;
}

export interface Evidence {
  baseline: RunProfile;
  candidate: RunProfile;
  /** The first real job that ran the candidate; null until one has. */
  real: RunProfile | null;
  diff: EvidenceDiff;
  blastRadius: BlastRadius;
  thresholds: Thresholds;
  checks: Check[];
  verdict: Verdict;
  computedAt: string;
  /** Pipeline incidents only (spec: absent otherwise). */
  scriptVersions?: ScriptVersionChange[];
}

export type IncidentSubject = 'pipeline' | 'tap';

/** Tap incidents: the stored script versions compared, and how the change came about. */
export interface TapScriptVersions {
  before: TapScriptVersion;
  after: TapScriptVersion;
  origin: TapScriptOrigin;
}

/**
 * The evidence while it is still computed (addendum): `verdict` pending with the parts known before
 * any script ran (what changed, the thresholds, what the pipeline reaches); null for the rest.
 */
export interface PendingEvidence {
  baseline: null;
  candidate: null;
  real: null;
  diff: null;
  /** Null when the pipeline is gone meanwhile. */
  blastRadius: BlastRadius | null;
  thresholds: Thresholds;
  checks: Check[];
  verdict: 'pending';
  computedAt: null;
  scriptVersions: ScriptVersionChange[];
}

export interface IncidentListItem {
  id: string;
  subject: IncidentSubject;
  subjectName: string;
  openedAt: string;
  verdict: Verdict;
  summary: string;
}

export interface Incident extends IncidentListItem {
  status: 'open' | 'resolved';
  resolvedAt: string | null;
  resolution: string | null;
  scriptVersions: ScriptVersionChange[];
  /** Tap incidents only. */
  tapVersions?: { before: number; after: number };
}
