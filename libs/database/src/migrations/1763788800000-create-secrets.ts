import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateSecrets1763788800000 implements MigrationInterface {
  name = 'CreateSecrets1763788800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tapyard"."secrets" (
        "id" bigserial PRIMARY KEY,
        "environment" varchar(40) NOT NULL,
        "name" varchar(200) NOT NULL,
        "key_id" varchar(16) NOT NULL,
        "nonce" bytea NOT NULL,
        "ciphertext" bytea NOT NULL,
        "auth_tag" bytea NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "uq_secrets_environment_name" UNIQUE ("environment", "name")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tapyard"."secrets"`);
  }
}
