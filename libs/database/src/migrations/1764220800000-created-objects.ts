import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each pipeline created at its destination (tables, collections, job folders of files), so that
 * `DELETE /pipeline?deleteData=true` drops only those, and the mark of a pipeline whose delete has
 * begun (loads and changes are refused until the delete is repeated and finishes).
 */
export class CreatedObjects1764220800000 implements MigrationInterface {
  name = 'CreatedObjects1764220800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."pipelines" ADD COLUMN "deleting_since" timestamptz`);
    // Rows go with their pipeline (ON DELETE CASCADE): a pipeline deleted without its data, then
    // created again under the same name, does not own what the earlier one created.
    await q.query(`
      CREATE TABLE "tapyard"."created_objects" (
        "creation_id" varchar(100) PRIMARY KEY,
        "pipeline_id" bigint NOT NULL REFERENCES "tapyard"."pipelines" ("id") ON DELETE CASCADE,
        "environment" varchar(40) NOT NULL,
        "pipeline" varchar(128) NOT NULL,
        "store" varchar(20) NOT NULL,
        "database" text,
        "container" text NOT NULL,
        "name" text NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX "ix_created_objects_pipeline" ON "tapyard"."created_objects" ("pipeline_id")`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."created_objects"`);
    await q.query(`ALTER TABLE "tapyard"."pipelines" DROP COLUMN "deleting_since"`);
  }
}
