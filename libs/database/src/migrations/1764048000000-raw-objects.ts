import { MigrationInterface, QueryRunner } from 'typeorm';

/** Objects of the raw buckets FileNotifier has taken: claiming a row is what makes intake exactly-once. */
export class RawObjects1764048000000 implements MigrationInterface {
  name = 'RawObjects1764048000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."raw_objects" (
        "environment" varchar(40) NOT NULL,
        "object_key" text NOT NULL,
        "etag" varchar(200) NOT NULL,
        "pipeline_token" varchar(64) NOT NULL,
        "claimed_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "object_key", "etag")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."raw_objects"`);
  }
}
