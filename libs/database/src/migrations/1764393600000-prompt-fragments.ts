import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tap prompt fragments per environment (tenant), and a generation counter per environment that every
 * write bumps in the same transaction: API instances compare it to decide whether their cache is stale.
 */
export class PromptFragments1764393600000 implements MigrationInterface {
  name = 'PromptFragments1764393600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."prompt_fragments" (
        "environment" varchar(64) NOT NULL,
        "key" varchar(100) NOT NULL,
        "aliases" jsonb NOT NULL DEFAULT '[]',
        "content" text NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "key")
      )`);
    await q.query(`
      CREATE TABLE "tapyard"."prompt_fragment_generations" (
        "environment" varchar(64) PRIMARY KEY,
        "generation" bigint NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."prompt_fragment_generations"`);
    await q.query(`DROP TABLE "tapyard"."prompt_fragments"`);
  }
}
