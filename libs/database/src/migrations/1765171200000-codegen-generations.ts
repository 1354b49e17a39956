import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The model calls writing a CodeGen script, one row per script while its writer works: a job finding
 * no script that fits waits for the writer of the same instruction and columns (a pipeline's save, another
 * job) instead of asking the model again, across the API and every worker host. The writer renews its row;
 * one whose process died is passed over once its row is stale.
 */
export class CodegenGenerations1765171200000 implements MigrationInterface {
  name = 'CodegenGenerations1765171200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."codegen_generations" (
        "environment" varchar(64) NOT NULL,
        "pipeline" varchar(200) NOT NULL,
        "kind" varchar(20) NOT NULL,
        "fingerprint" char(64) NOT NULL,
        "holder" uuid NOT NULL,
        "renewed_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "pipeline", "kind")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."codegen_generations"`);
  }
}
