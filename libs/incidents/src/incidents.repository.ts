import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type {
  Evidence,
  Incident,
  IncidentListItem,
  IncidentSubject,
  ScriptVersionChange,
  TapScriptVersions,
} from './incident.types';
import type { Thresholds, Verdict } from './evidence';

interface Row {
  id: string;
  subject: IncidentSubject;
  subject_name: string;
  opened_at: Date;
  verdict: Verdict;
  summary: string;
  evidence: Evidence | null;
  script_versions: ScriptVersionChange[];
  resolved_at: Date | null;
  resolution: string | null;
  tap_scripts: TapScriptVersions | null;
}

const COLUMNS = `id, subject, subject_name, opened_at, verdict, summary, evidence, script_versions, resolved_at, resolution, tap_scripts`;

/** A stored incident with what its evidence is computed from. */
export type StoredIncident = Incident & { evidence: Evidence | null; tapScripts: TapScriptVersions | null };

const toItem = (r: Row): IncidentListItem => ({
  id: r.id,
  subject: r.subject,
  subjectName: r.subject_name,
  openedAt: r.opened_at.toISOString(),
  verdict: r.verdict,
  summary: r.summary,
});

const toIncident = (r: Row): Incident => ({
  ...toItem(r),
  status: r.resolved_at ? 'resolved' : 'open',
  resolvedAt: r.resolved_at?.toISOString() ?? null,
  resolution: r.resolution,
  scriptVersions: r.script_versions,
  ...(r.tap_scripts
    ? { tapVersions: { before: r.tap_scripts.before.version, after: r.tap_scripts.after.version } }
    : {}),
});

const stored = (r: Row): StoredIncident => ({
  ...toIncident(r),
  evidence: r.evidence,
  tapScripts: r.tap_scripts,
});

@Injectable()
export class IncidentsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async insert(
    environment: string,
    i: {
      id: string;
      subject: IncidentSubject;
      subjectName: string;
      verdict: Verdict;
      summary: string;
      scriptVersions: ScriptVersionChange[];
      tapScripts?: TapScriptVersions;
    },
  ): Promise<void> {
    await this.ds.query(
      `INSERT INTO tapyard.incidents
         (id, environment, subject, subject_name, verdict, summary, script_versions, tap_scripts)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb)`,
      [
        i.id,
        environment,
        i.subject,
        i.subjectName,
        i.verdict,
        i.summary,
        JSON.stringify(i.scriptVersions),
        i.tapScripts ? JSON.stringify(i.tapScripts) : null,
      ],
    );
  }

  /** Whether a tap incident already compares these two stored scripts (adopting a generated version). */
  async hasTapChange(environment: string, tap: string, change: TapScriptVersions): Promise<boolean> {
    const rows = (await this.ds.query(
      `SELECT 1 FROM tapyard.incidents
        WHERE environment = $1 AND subject = 'tap' AND subject_name = $2
          AND tap_scripts->'before'->>'scriptPath' = $3 AND tap_scripts->'after'->>'scriptPath' = $4
        LIMIT 1`,
      [environment, tap, change.before.scriptPath, change.after.scriptPath],
    )) as unknown[];
    return rows.length > 0;
  }

  async setEvidence(
    environment: string,
    id: string,
    evidence: Evidence,
    summary: string,
    scriptVersions?: ScriptVersionChange[],
  ): Promise<void> {
    await this.ds.query(
      `UPDATE tapyard.incidents SET evidence = $3::jsonb, verdict = $4, summary = $5,
         script_versions = coalesce($6::jsonb, script_versions)
        WHERE environment = $1 AND id = $2`,
      [
        environment,
        id,
        JSON.stringify(evidence),
        evidence.verdict,
        summary,
        scriptVersions ? JSON.stringify(scriptVersions) : null,
      ],
    );
  }

  async find(environment: string, id: string): Promise<StoredIncident | null> {
    const rows = (await this.ds.query(
      `SELECT ${COLUMNS} FROM tapyard.incidents WHERE environment = $1 AND id = $2`,
      [environment, id],
    )) as Row[];
    return rows[0] ? stored(rows[0]) : null;
  }

  /** `pipeline` and `tap` select incidents of that subject; given both, the union. */
  async list(
    environment: string,
    filter: { pipeline?: string; tap?: string; verdict?: string },
  ): Promise<IncidentListItem[]> {
    const either = filter.pipeline !== undefined || filter.tap !== undefined;
    const rows = (await this.ds.query(
      `SELECT ${COLUMNS} FROM tapyard.incidents
        WHERE environment = $1 AND ($4::boolean IS FALSE
            OR (subject = 'pipeline' AND subject_name = $2) OR (subject = 'tap' AND subject_name = $3))
          AND ($5::text IS NULL OR verdict = $5)
        ORDER BY opened_at DESC LIMIT 500`,
      [environment, filter.pipeline ?? null, filter.tap ?? null, either, filter.verdict ?? null],
    )) as Row[];
    return rows.map(toItem);
  }

  /** Open incidents of a pipeline whose change is now live at `after` and that have no real run yet. */
  async awaitingReal(environment: string, pipeline: string): Promise<(Incident & { evidence: Evidence })[]> {
    const rows = (await this.ds.query(
      `SELECT ${COLUMNS} FROM tapyard.incidents
        WHERE environment = $1 AND subject = 'pipeline' AND subject_name = $2 AND resolved_at IS NULL
          AND evidence IS NOT NULL
          AND evidence->'real' = 'null'::jsonb`,
      [environment, pipeline],
    )) as Row[];
    return rows.map((r) => ({ ...toIncident(r), evidence: r.evidence as Evidence }));
  }

  /** Open incidents of a tap whose candidate is `scriptPath` and that have no real run yet. */
  async awaitingTapReal(environment: string, tap: string, scriptPath: string): Promise<StoredIncident[]> {
    const rows = (await this.ds.query(
      `SELECT ${COLUMNS} FROM tapyard.incidents
        WHERE environment = $1 AND subject = 'tap' AND subject_name = $2 AND resolved_at IS NULL
          AND tap_scripts->'after'->>'scriptPath' = $3
          AND evidence IS NOT NULL AND evidence->'real' = 'null'::jsonb`,
      [environment, tap, scriptPath],
    )) as Row[];
    return rows.map(stored);
  }

  async thresholds(environment: string, pipeline: string): Promise<Partial<Thresholds> | null> {
    const rows = (await this.ds.query(
      `SELECT thresholds FROM tapyard.incident_thresholds WHERE environment = $1 AND pipeline = $2`,
      [environment, pipeline],
    )) as { thresholds: Partial<Thresholds> }[];
    return rows[0]?.thresholds ?? null;
  }

  async setThresholds(environment: string, pipeline: string, thresholds: Thresholds): Promise<void> {
    await this.ds.query(
      `INSERT INTO tapyard.incident_thresholds (environment, pipeline, thresholds) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (environment, pipeline) DO UPDATE SET thresholds = EXCLUDED.thresholds, updated_at = now()`,
      [environment, pipeline, JSON.stringify(thresholds)],
    );
  }

  async clearThresholds(environment: string, pipeline: string): Promise<void> {
    await this.ds.query(`DELETE FROM tapyard.incident_thresholds WHERE environment = $1 AND pipeline = $2`, [
      environment,
      pipeline,
    ]);
  }

  async resolve(environment: string, id: string, resolution: string | null): Promise<void> {
    await this.ds.query(
      `UPDATE tapyard.incidents SET resolved_at = coalesce(resolved_at, now()), resolution = $3
        WHERE environment = $1 AND id = $2`,
      [environment, id, resolution],
    );
  }

  async deletePipeline(environment: string, pipeline: string): Promise<void> {
    await this.ds.query(
      `DELETE FROM tapyard.incidents WHERE environment = $1 AND subject = 'pipeline' AND subject_name = $2`,
      [environment, pipeline],
    );
    await this.clearThresholds(environment, pipeline);
  }

  async deleteTap(environment: string, tap: string): Promise<void> {
    await this.ds.query(
      `DELETE FROM tapyard.incidents WHERE environment = $1 AND subject = 'tap' AND subject_name = $2`,
      [environment, tap],
    );
  }
}
