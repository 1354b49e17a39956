import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Confinement of taps and jobs to their caller's scope:
 * - `taps.grant`: what the tap may do when it runs without a caller (schedules) and what its run keys
 *   may do, taken from whoever last changed its code (null: saved before grants existed, unlimited);
 * - `jobs.scope`: the pipeline's scope fields (catalog, database, type) when the job began, so status
 *   stays with the catalog it was written in, whatever later happens to the pipeline's name;
 * - `publisher_tokens`: the catalog a caller-chosen publisher token belongs to, claimed by its first use.
 */
export class TapGrantsAndJobScopes1764220800000 implements MigrationInterface {
  name = 'TapGrantsAndJobScopes1764220800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tapyard"."taps" ADD COLUMN "grant" jsonb`);
    await q.query(`ALTER TABLE "tapyard"."jobs" ADD COLUMN "scope" jsonb`);
    await q.query(`
      CREATE TABLE "tapyard"."publisher_tokens" (
        "environment" varchar(40) NOT NULL,
        "token" varchar(200) NOT NULL,
        "catalog" varchar(200) NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "token")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."publisher_tokens"`);
    await q.query(`ALTER TABLE "tapyard"."jobs" DROP COLUMN "scope"`);
    await q.query(`ALTER TABLE "tapyard"."taps" DROP COLUMN "grant"`);
  }
}
