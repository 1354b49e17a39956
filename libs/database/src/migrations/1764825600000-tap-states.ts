import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Incremental tap state, versioned per tap. A run's new state is a `pending` version naming the jobs
 * its records went to; it becomes `committed` once every one of them ended loaded (their terminal
 * status in tapyard.jobs, written by whichever worker finished them) and `discarded` when one failed.
 * The current state is the committed version with the highest number; older versions are history.
 */
export class TapStates1764825600000 implements MigrationInterface {
  name = 'TapStates1764825600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."tap_states" (
        "environment" varchar(40) NOT NULL,
        "tap" varchar(128) NOT NULL,
        "version" integer NOT NULL,
        "state" jsonb,
        "status" varchar(10) NOT NULL,
        "source" varchar(4) NOT NULL,
        "run_id" uuid,
        "pipeline_tokens" text[] NOT NULL DEFAULT '{}',
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "committed_at" timestamptz,
        "reason" text,
        PRIMARY KEY ("environment", "tap", "version")
      )`);
    await q.query(
      `CREATE INDEX "tap_states_pending" ON "tapyard"."tap_states" ("environment", "tap") WHERE "status" = 'pending'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."tap_states"`);
  }
}
