import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether a pipeline was saved since saves refuse a table or collection that a pipeline outside the
 * caller's scope loads into. Who saved the definitions stored before is not known, so they are false:
 * such a pipeline loads beside no pipeline of another scope until someone allowed to do so saves it again.
 */
export class PipelineLocationsChecked1765257600000 implements MigrationInterface {
  name = 'PipelineLocationsChecked1765257600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "tapyard"."pipelines" ADD COLUMN "locations_checked" boolean NOT NULL DEFAULT false`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."pipelines" DROP COLUMN "locations_checked"`);
  }
}
