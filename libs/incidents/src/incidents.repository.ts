import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Evidence, Incident, IncidentListItem, ScriptVersionChange } from './incident.types';
import type { Verdict } from './evidence';

interface Row {
  id: string;
  subject: 'pipeline';
  subject_name: string;
  opened_at: Date;
  verdict: Verdict;
  summary: string;
  evidence: Evidence | null;
  script_versions: ScriptVersionChange[];
  resolved_at: Date | null;
  resolution: string | null;
}

const COLUMNS = `id, subject, subject_name, opened_at, verdict, summary, evidence, script_versions, resolved_at, resolution`;

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
});

@Injectable()
export class IncidentsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async insert(
    environment: string,
    i: {
      id: string;
      subjectName: string;
      verdict: Verdict;
      summary: string;
      scriptVersions: ScriptVersionChange[];
    },
  ): Promise<void> {
    await this.ds.query(
      `INSERT INTO tapyard.incidents (id, environment, subject, subject_name, verdict, summary, script_versions)
       VALUES ($1, $2, 'pipeline', $3, $4, $5, $6::jsonb)`,
      [i.id, environment, i.subjectName, i.verdict, i.summary, JSON.stringify(i.scriptVersions)],
    );
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

  async find(environment: string, id: string): Promise<(Incident & { evidence: Evidence | null }) | null> {
    const rows = (await this.ds.query(
      `SELECT ${COLUMNS} FROM tapyard.incidents WHERE environment = $1 AND id = $2`,
      [environment, id],
    )) as Row[];
    return rows[0] ? { ...toIncident(rows[0]), evidence: rows[0].evidence } : null;
  }

  async list(
    environment: string,
    filter: { pipeline?: string; verdict?: string },
  ): Promise<IncidentListItem[]> {
    const rows = (await this.ds.query(
      `SELECT ${COLUMNS} FROM tapyard.incidents
        WHERE environment = $1 AND ($2::text IS NULL OR subject_name = $2) AND ($3::text IS NULL OR verdict = $3)
        ORDER BY opened_at DESC LIMIT 500`,
      [environment, filter.pipeline ?? null, filter.verdict ?? null],
    )) as Row[];
    return rows.map(toItem);
  }

  /** Open incidents of a pipeline whose change is now live at `after` and that have no real run yet. */
  async awaitingReal(environment: string, pipeline: string): Promise<(Incident & { evidence: Evidence })[]> {
    const rows = (await this.ds.query(
      `SELECT ${COLUMNS} FROM tapyard.incidents
        WHERE environment = $1 AND subject_name = $2 AND resolved_at IS NULL AND evidence IS NOT NULL
          AND evidence->'real' = 'null'::jsonb`,
      [environment, pipeline],
    )) as Row[];
    return rows.map((r) => ({ ...toIncident(r), evidence: r.evidence as Evidence }));
  }

  async resolve(environment: string, id: string, resolution: string | null): Promise<void> {
    await this.ds.query(
      `UPDATE tapyard.incidents SET resolved_at = coalesce(resolved_at, now()), resolution = $3
        WHERE environment = $1 AND id = $2`,
      [environment, id, resolution],
    );
  }

  async deletePipeline(environment: string, pipeline: string): Promise<void> {
    await this.ds.query(`DELETE FROM tapyard.incidents WHERE environment = $1 AND subject_name = $2`, [
      environment,
      pipeline,
    ]);
  }
}
