import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether a pipeline may load into a table or collection that exists but that no pipeline of its
 * environment created (made by a DBA or another application, or left by a pipeline deleted without
 * its data): true when it was last saved by a caller holding unscoped pipeline:update, false when a
 * scoped caller saved it, whose pipeline then loads only into places that are new or a pipeline
 * created. Pipelines stored before are true: they were loading there already. The index finds a
 * place's creation records at load time.
 */
export class PipelineMayAdopt1765516800000 implements MigrationInterface {
  name = 'PipelineMayAdopt1765516800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."pipelines" ADD COLUMN "may_adopt" boolean NOT NULL DEFAULT true`);
    await q.query(
      `CREATE INDEX "ix_created_objects_place" ON "tapyard"."created_objects" ("environment", "store", "name")`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "tapyard"."ix_created_objects_place"`);
    await q.query(`ALTER TABLE "tapyard"."pipelines" DROP COLUMN "may_adopt"`);
  }
}
