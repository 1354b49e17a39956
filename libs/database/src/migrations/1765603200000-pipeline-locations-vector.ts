import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Vector-store containers became places of the sharing rule (the vectorStore section's `locations`):
 * every pipeline's recorded places are marked stale, so the next save reads each definition whole and
 * records its places again, containers included (see PipelineLocations1765430400000).
 */
export class PipelineLocationsVector1765603200000 implements MigrationInterface {
  name = 'PipelineLocationsVector1765603200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE "tapyard"."pipelines" SET "locations_version" = NULL`);
  }

  async down(): Promise<void> {
    // Nothing to undo: stale places are read whole and recorded again.
  }
}
