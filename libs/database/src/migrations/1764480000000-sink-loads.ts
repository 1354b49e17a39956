import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sinks (REST endpoints, message brokers, warehouses) cannot be asked afterwards what a job delivered:
 * each records here that a job's delivery finished (what a redelivery checks), and keeps the rows it
 * could not deliver, with the reason, until the pipeline is deleted with its data.
 */
export class SinkLoads1764480000000 implements MigrationInterface {
  name = 'SinkLoads1764480000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."sink_loads" (
        "environment" varchar(64) NOT NULL,
        "destination" varchar(20) NOT NULL,
        "pipeline" varchar(200) NOT NULL,
        "pipeline_token" varchar(200) NOT NULL,
        "loaded" bigint NOT NULL,
        "rejected" bigint NOT NULL,
        "location" text NOT NULL,
        "committed_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "destination", "pipeline_token")
      )`);
    await q.query(`
      CREATE TABLE "tapyard"."sink_rejects" (
        "id" bigserial PRIMARY KEY,
        "environment" varchar(64) NOT NULL,
        "destination" varchar(20) NOT NULL,
        "pipeline" varchar(200) NOT NULL,
        "pipeline_token" varchar(200) NOT NULL,
        "line" integer NOT NULL,
        "stage" varchar(64) NOT NULL,
        "reason" text NOT NULL,
        "raw" text NOT NULL
      )`);
    await q.query(
      `CREATE INDEX "sink_rejects_pipeline" ON "tapyard"."sink_rejects" ("environment", "pipeline", "destination")`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."sink_rejects"`);
    await q.query(`DROP TABLE "tapyard"."sink_loads"`);
  }
}
