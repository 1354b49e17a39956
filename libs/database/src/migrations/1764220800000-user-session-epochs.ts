import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A random session epoch per user, copied into each login session and compared on every request: a
 * password or role change draws a new one, which ends every session of that user at once, and a
 * user created again under a deleted user's name starts with a fresh one, so old sessions stay dead.
 */
export class UserSessionEpochs1764220800000 implements MigrationInterface {
  name = 'UserSessionEpochs1764220800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "tapyard"."users" ADD COLUMN "session_epoch" uuid NOT NULL DEFAULT gen_random_uuid()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."users" DROP COLUMN "session_epoch"`);
  }
}
