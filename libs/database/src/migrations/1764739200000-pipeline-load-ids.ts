import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether a pipeline's loaded rows carry `_tapyard_load_id`. Pipelines stored before write modes
 * existed keep loading exactly as before (false); the repository creates new ones with true.
 */
export class PipelineLoadIds1764739200000 implements MigrationInterface {
  name = 'PipelineLoadIds1764739200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."pipelines" ADD COLUMN "load_id" boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."pipelines" DROP COLUMN "load_id"`);
  }
}
