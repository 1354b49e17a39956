import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `created_objects.marked`: the object was created carrying its creation id in the store itself (a
 * vector-store container's metadata, description or comment), so the record holds only while the
 * container still carries it. Rows from before are unmarked: their containers were made without one.
 */
export class CreatedObjectsMarked1765689600000 implements MigrationInterface {
  name = 'CreatedObjectsMarked1765689600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "tapyard"."created_objects" ADD COLUMN "marked" boolean NOT NULL DEFAULT false`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."created_objects" DROP COLUMN "marked"`);
  }
}
