import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Incidents: a CodeGen script replaced an earlier version, and the evidence (computed by platform code)
 * of what the change does to the pipeline's output. The landed sample also keeps the output ratio of
 * the pipeline's recent jobs, which the evidence compares against.
 */
export class Incidents1764652800000 implements MigrationInterface {
  name = 'Incidents1764652800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."incidents" (
        "id" uuid PRIMARY KEY,
        "environment" varchar(64) NOT NULL,
        "subject" varchar(20) NOT NULL,
        "subject_name" varchar(200) NOT NULL,
        "opened_at" timestamptz NOT NULL DEFAULT now(),
        "verdict" varchar(20) NOT NULL,
        "summary" text NOT NULL,
        "evidence" jsonb,
        "script_versions" jsonb NOT NULL DEFAULT '[]',
        "resolved_at" timestamptz,
        "resolution" text
      )`);
    await q.query(
      `CREATE INDEX "incidents_subject" ON "tapyard"."incidents" ("environment", "subject", "subject_name", "opened_at" DESC)`,
    );
    await q.query(
      `ALTER TABLE "tapyard"."landed_samples" ADD COLUMN "recent_ratios" jsonb NOT NULL DEFAULT '[]'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."landed_samples" DROP COLUMN "recent_ratios"`);
    await q.query(`DROP TABLE "tapyard"."incidents"`);
  }
}
