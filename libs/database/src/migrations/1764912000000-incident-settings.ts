import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Incidents of tap script changes keep the two script versions they compare (`tap_scripts`), and a
 * pipeline may set its own evidence thresholds instead of the built-in defaults.
 */
export class IncidentSettings1764912000000 implements MigrationInterface {
  name = 'IncidentSettings1764912000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."incidents" ADD COLUMN "tap_scripts" jsonb`);
    await q.query(`
      CREATE TABLE "tapyard"."incident_thresholds" (
        "environment" varchar(64) NOT NULL,
        "pipeline" varchar(200) NOT NULL,
        "thresholds" jsonb NOT NULL,
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "pipeline")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."incident_thresholds"`);
    await q.query(`ALTER TABLE "tapyard"."incidents" DROP COLUMN "tap_scripts"`);
  }
}
