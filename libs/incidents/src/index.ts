export * from './evidence';
export { IncidentsModule } from './incidents.module';
export { IncidentsService } from './incidents.service';
export type {
  BlastRadius,
  Evidence,
  Incident,
  IncidentListItem,
  PendingEvidence,
  ScriptVersionChange,
} from './incident.types';
export { IncidentErrorCode } from './incident-errors';
export type {
  TapEvidenceSource,
  TapRan,
  TapSampleRun,
  TapScriptChange,
  TapScriptOrigin,
  TapScriptVersion,
  TapSubject,
} from './tap-evidence';
