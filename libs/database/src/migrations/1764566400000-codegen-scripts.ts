import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * CodeGen scripts (AI-written data-quality and transformation scripts of a pipeline): the live entry
 * per pipeline and kind, its numbered version history (the text of every version, so a restore needs
 * neither the object store nor the repository to remember it), and a small sample of the rows a
 * pipeline last landed, on which a new script is dry-run before it goes live.
 */
export class CodegenScripts1764566400000 implements MigrationInterface {
  name = 'CodegenScripts1764566400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."codegen_scripts" (
        "environment" varchar(64) NOT NULL,
        "pipeline" varchar(200) NOT NULL,
        "kind" varchar(20) NOT NULL,
        "version" integer,
        "origin" varchar(20),
        "model" text,
        "generated_at" timestamptz,
        "fingerprint" char(64),
        "contract_version" integer NOT NULL,
        "output_columns" jsonb NOT NULL DEFAULT '[]',
        "storage" varchar(10) NOT NULL,
        "object_key" text,
        "repo_path" text,
        "commit_sha" varchar(64),
        "pending_reason" text,
        "conflict_reason" text,
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "pipeline", "kind")
      )`);
    await q.query(`
      CREATE TABLE "tapyard"."codegen_script_versions" (
        "environment" varchar(64) NOT NULL,
        "pipeline" varchar(200) NOT NULL,
        "kind" varchar(20) NOT NULL,
        "version" integer NOT NULL,
        "origin" varchar(20),
        "model" text,
        "generated_at" timestamptz,
        "fingerprint" char(64),
        "contract_version" integer NOT NULL,
        "output_columns" jsonb NOT NULL DEFAULT '[]',
        "script" text NOT NULL,
        "commit_sha" varchar(64),
        "created_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "pipeline", "kind", "version")
      )`);
    await q.query(`
      CREATE TABLE "tapyard"."landed_samples" (
        "environment" varchar(64) NOT NULL,
        "pipeline" varchar(200) NOT NULL,
        "columns" jsonb NOT NULL,
        "rows" jsonb NOT NULL,
        "taken_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "pipeline")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."landed_samples"`);
    await q.query(`DROP TABLE "tapyard"."codegen_script_versions"`);
    await q.query(`DROP TABLE "tapyard"."codegen_scripts"`);
  }
}
