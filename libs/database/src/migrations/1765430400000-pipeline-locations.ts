import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where each pipeline loads (its places as saves describe them), so that a save finds the pipelines
 * loading where it will by an index instead of reading every definition of its environment.
 * `locations_version` is the version the places were read from: a definition changed by a process
 * that does not write them (a release before this one, during a rolling upgrade) bumps `version`
 * and leaves them stale, and stale rows (every row at first) are read whole, as before, and
 * filled in by the save that reads them.
 */
export class PipelineLocations1765430400000 implements MigrationInterface {
  name = 'PipelineLocations1765430400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "tapyard"."pipelines" ADD COLUMN "locations" text[], ADD COLUMN "locations_version" integer`,
    );
    // A column of its own (not the comparison in the query) so that the planner has statistics for it
    // and takes the two indexes below instead of reading the table.
    await q.query(
      `ALTER TABLE "tapyard"."pipelines" ADD COLUMN "locations_stale" boolean
       GENERATED ALWAYS AS ("locations_version" IS DISTINCT FROM "version") STORED`,
    );
    await q.query(`CREATE INDEX "pipelines_locations" ON "tapyard"."pipelines" USING gin ("locations")`);
    await q.query(
      `CREATE INDEX "pipelines_locations_stale" ON "tapyard"."pipelines" ("environment") WHERE "locations_stale"`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "tapyard"."pipelines_locations_stale"`);
    await q.query(`DROP INDEX "tapyard"."pipelines_locations"`);
    await q.query(
      `ALTER TABLE "tapyard"."pipelines" DROP COLUMN "locations_stale", DROP COLUMN "locations_version",
       DROP COLUMN "locations"`,
    );
  }
}
