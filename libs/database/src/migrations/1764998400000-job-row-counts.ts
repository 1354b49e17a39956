import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A job's summary keeps the rows it loaded and rejected, written with its terminal event, so the
 * rollup answers them as numbers (null for jobs that ended before, or ended without loading).
 */
export class JobRowCounts1764998400000 implements MigrationInterface {
  name = 'JobRowCounts1764998400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "tapyard"."jobs" ADD COLUMN "rows_loaded" bigint, ADD COLUMN "rows_rejected" bigint`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."jobs" DROP COLUMN "rows_rejected", DROP COLUMN "rows_loaded"`);
  }
}
