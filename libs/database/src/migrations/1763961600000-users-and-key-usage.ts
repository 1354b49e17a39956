import { MigrationInterface, QueryRunner } from 'typeorm';

/** Login users (per environment) and batched `lastUsedAt` marks of API keys (the keys live in a secret). */
export class UsersAndKeyUsage1763961600000 implements MigrationInterface {
  name = 'UsersAndKeyUsage1763961600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."users" (
        "environment" varchar(40) NOT NULL,
        "username" varchar(64) NOT NULL,
        "role" varchar(16) NOT NULL CHECK ("role" IN ('admin', 'editor', 'viewer')),
        "password_hash" text NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY ("environment", "username")
      )`);
    await q.query(`
      CREATE TABLE "tapyard"."api_key_usage" (
        "environment" varchar(40) NOT NULL,
        "label" varchar(64) NOT NULL,
        "last_used_at" timestamptz NOT NULL,
        PRIMARY KEY ("environment", "label")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."api_key_usage"`);
    await q.query(`DROP TABLE "tapyard"."users"`);
  }
}
