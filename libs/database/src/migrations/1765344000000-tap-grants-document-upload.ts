import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tap grants now carry `document:upload` (in the saver's scope), and a run into a document pipeline
 * needs it for the pipeline's collection. Grants stored before could not carry it, yet fed any
 * collection their `pipeline:upload` reached: each such grant gets an unscoped `document:upload`, so
 * the taps saved before (scheduled document taps above all) feed what they fed. A save that changes
 * the code replaces the grant with the saver's own, collection scope included; a null grant (saved
 * before grants existed) stays unlimited.
 */
export class TapGrantsDocumentUpload1765344000000 implements MigrationInterface {
  name = 'TapGrantsDocumentUpload1765344000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      UPDATE "tapyard"."taps" SET "grant" = "grant" || '["document:upload"]'::jsonb
      WHERE jsonb_typeof("grant") = 'array'
        AND EXISTS (SELECT 1 FROM jsonb_array_elements_text("grant") g
                    WHERE g = 'pipeline:upload' OR g LIKE 'pipeline:upload:%')
        AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text("grant") g
                        WHERE g = 'document:upload' OR g LIKE 'document:upload:%')`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Also takes the unscoped one from grants saved since by full-access callers; the code before
    // this migration never reads it.
    await q.query(`
      UPDATE "tapyard"."taps" SET "grant" = "grant" - 'document:upload'
      WHERE jsonb_typeof("grant") = 'array' AND "grant" ? 'document:upload'`);
  }
}
