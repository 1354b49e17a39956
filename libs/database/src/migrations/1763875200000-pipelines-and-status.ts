import { MigrationInterface, QueryRunner } from 'typeorm';

export class PipelinesAndStatus1763875200000 implements MigrationInterface {
  name = 'PipelinesAndStatus1763875200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."pipelines" (
        "id" bigserial PRIMARY KEY,
        "environment" varchar(40) NOT NULL,
        "name" varchar(128) NOT NULL,
        "catalog" varchar(200),
        "definition" jsonb NOT NULL,
        "version" integer NOT NULL DEFAULT 1,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "uq_pipelines_environment_name" UNIQUE ("environment", "name")
      )`);
    // Append-only stage events of ingestion jobs.
    await q.query(`
      CREATE TABLE "tapyard"."status_events" (
        "id" bigserial PRIMARY KEY,
        "environment" varchar(40) NOT NULL,
        "pipeline" varchar(128) NOT NULL,
        "pipeline_token" varchar(64) NOT NULL,
        "publisher_token" varchar(200),
        "filename" text NOT NULL,
        "process_name" varchar(40) NOT NULL,
        "state" varchar(16) NOT NULL,
        "description" text NOT NULL,
        "epoch" bigint NOT NULL
      )`);
    await q.query(
      `CREATE INDEX "ix_status_events_job" ON "tapyard"."status_events" ("environment", "pipeline_token", "id")`,
    );
    await q.query(
      `CREATE INDEX "ix_status_events_publisher" ON "tapyard"."status_events" ("environment", "publisher_token", "id") WHERE "publisher_token" IS NOT NULL`,
    );
    // One summary row per job, updated with every event: a rollup poll reads one row per job.
    await q.query(`
      CREATE TABLE "tapyard"."jobs" (
        "environment" varchar(40) NOT NULL,
        "pipeline_token" varchar(64) NOT NULL,
        "pipeline" varchar(128) NOT NULL,
        "publisher_token" varchar(200),
        "filename" text NOT NULL,
        "status" varchar(16) NOT NULL,
        "last_process" varchar(40) NOT NULL,
        "last_state" varchar(16) NOT NULL,
        "started_at" bigint NOT NULL,
        "last_event_at" bigint NOT NULL,
        "ended_at" bigint,
        "last_error_process" varchar(40),
        "last_error_description" text,
        PRIMARY KEY ("environment", "pipeline_token")
      )`);
    await q.query(
      `CREATE INDEX "ix_jobs_publisher" ON "tapyard"."jobs" ("environment", "publisher_token") WHERE "publisher_token" IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX "ix_jobs_pipeline" ON "tapyard"."jobs" ("environment", "pipeline", "started_at" DESC)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."jobs"`);
    await q.query(`DROP TABLE "tapyard"."status_events"`);
    await q.query(`DROP TABLE "tapyard"."pipelines"`);
  }
}
