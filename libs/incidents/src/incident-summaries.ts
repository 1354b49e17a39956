import { Evidence, ScriptVersionChange, TapScriptVersions } from './incident.types';

/** An incident's one-line summary: the change, the verdict and the checks that failed. */
export function tapSummaryOf(tap: string, scripts: TapScriptVersions, evidence: Evidence): string {
  const failed = evidence.checks.filter((c) => !c.passed).map((c) => `${c.name} (${c.observed})`);
  return (
    `tap '${tap}' script ${scripts.before.version} → ${scripts.after.version} (${scripts.origin}): ${evidence.verdict}` +
    (failed.length > 0 ? `; failed: ${failed.join(', ')}` : '')
  );
}
export function summaryOf(pipeline: string, versions: ScriptVersionChange[], evidence: Evidence): string {
  const what = versions.map((v) => `${v.kind} ${v.before} → ${v.after}`).join(', ');
  const failed = evidence.checks.filter((c) => !c.passed).map((c) => `${c.name} (${c.observed})`);
  return (
    `'${pipeline}' ${what}: ${evidence.verdict}` +
    (failed.length > 0 ? `; failed: ${failed.join(', ')}` : '') +
    (evidence.candidate.source === 'landed-sample' ? '' : '; no landed rows to compare on yet')
  );
}
