import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Taps, their run history and the document ledger. `next_fire_at` is the schedule's claim: a worker
 * runs a fire time only if its conditional update moved it forward, so one fire is one run however
 * many workers poll. `last_run_at` is the run-debounce claim, taken the same way by API instances.
 */
export class Taps1764134400000 implements MigrationInterface {
  name = 'Taps1764134400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."taps" (
        "environment" varchar(40) NOT NULL,
        "name" varchar(128) NOT NULL,
        "config" jsonb NOT NULL,
        "next_fire_at" timestamptz,
        "last_run_at" timestamptz,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "name")
      )`);
    await q.query(
      `CREATE INDEX "taps_due" ON "tapyard"."taps" ("next_fire_at") WHERE "next_fire_at" IS NOT NULL`,
    );
    await q.query(`
      CREATE TABLE "tapyard"."tap_runs" (
        "run_id" uuid PRIMARY KEY,
        "environment" varchar(40) NOT NULL,
        "tap" varchar(128) NOT NULL,
        "mode" varchar(8) NOT NULL,
        "trigger" varchar(10) NOT NULL,
        "status" varchar(10) NOT NULL,
        "started_at" timestamptz NOT NULL,
        "finished_at" timestamptz,
        "duration_ms" integer,
        "record_count" bigint NOT NULL DEFAULT 0,
        "persisted" boolean NOT NULL DEFAULT false,
        "persisted_reason" varchar(32),
        "publisher_token" varchar(64),
        "error" text
      )`);
    await q.query(
      `CREATE INDEX "tap_runs_recent" ON "tapyard"."tap_runs" ("environment", "tap", "started_at" DESC)`,
    );
    await q.query(`
      CREATE TABLE "tapyard"."tap_ledger" (
        "environment" varchar(40) NOT NULL,
        "tap" varchar(128) NOT NULL,
        "uri" text NOT NULL,
        "filename" text NOT NULL,
        "content_hash" varchar(64) NOT NULL,
        "staged_path" text NOT NULL,
        "pipeline_token" varchar(64) NOT NULL,
        "target_pipeline" varchar(128),
        "processed_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "tap", "uri")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."tap_ledger"`);
    await q.query(`DROP TABLE "tapyard"."tap_runs"`);
    await q.query(`DROP TABLE "tapyard"."taps"`);
  }
}
