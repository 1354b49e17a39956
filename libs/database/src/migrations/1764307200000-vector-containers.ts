import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The embedding model and dimension each vector-store container was filled with: a query embedded by
 * another model is refused even when the dimensions happen to match (their vectors are not comparable).
 */
export class VectorContainers1764307200000 implements MigrationInterface {
  name = 'VectorContainers1764307200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."vector_containers" (
        "environment" varchar(64) NOT NULL,
        "store" varchar(20) NOT NULL,
        "container" varchar(300) NOT NULL,
        "model" varchar(300) NOT NULL,
        "dimension" integer NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "store", "container")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."vector_containers"`);
  }
}
