import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PromptFragment } from './prompt-fragment';

interface Row {
  key: string;
  aliases: string[];
  content: string;
  created_at: Date;
  updated_at: Date;
}

const toFragment = (r: Row): PromptFragment => ({
  key: r.key,
  aliases: r.aliases,
  content: r.content,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

/** Fragments in Postgres; every write bumps the environment's generation in the same transaction. */
@Injectable()
export class PromptFragmentsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async generation(environment: string): Promise<string> {
    const rows = (await this.ds.query(
      `SELECT generation::text AS g FROM tapyard.prompt_fragment_generations WHERE environment = $1`,
      [environment],
    )) as { g: string }[];
    return rows[0]?.g ?? '0';
  }

  async list(environment: string): Promise<PromptFragment[]> {
    const rows = (await this.ds.query(
      `SELECT key, aliases, content, created_at, updated_at FROM tapyard.prompt_fragments
        WHERE environment = $1 ORDER BY key`,
      [environment],
    )) as Row[];
    return rows.map(toFragment);
  }

  async find(environment: string, key: string): Promise<PromptFragment | null> {
    const rows = (await this.ds.query(
      `SELECT key, aliases, content, created_at, updated_at FROM tapyard.prompt_fragments
        WHERE environment = $1 AND key = $2`,
      [environment, key],
    )) as Row[];
    return rows[0] ? toFragment(rows[0]) : null;
  }

  /** Create or update: `createdAt` stays, `updatedAt` is now. */
  async put(environment: string, key: string, aliases: string[], content: string): Promise<void> {
    await this.ds.transaction(async (m) => {
      await m.query(
        `INSERT INTO tapyard.prompt_fragments (environment, key, aliases, content)
         VALUES ($1, $2, $3::jsonb, $4)
         ON CONFLICT (environment, key) DO UPDATE
           SET aliases = EXCLUDED.aliases, content = EXCLUDED.content, updated_at = clock_timestamp()`,
        [environment, key, JSON.stringify(aliases), content],
      );
      await this.bump(m.query.bind(m), environment);
    });
  }

  /** Whether it existed. */
  async delete(environment: string, key: string): Promise<boolean> {
    return this.ds.transaction(async (m) => {
      const rows = (await m.query(
        `DELETE FROM tapyard.prompt_fragments WHERE environment = $1 AND key = $2 RETURNING key`,
        [environment, key],
      )) as unknown[];
      const deleted = (Array.isArray(rows[0]) ? (rows[0] as unknown[]) : rows).length > 0;
      if (deleted) await this.bump(m.query.bind(m), environment);
      return deleted;
    });
  }

  private async bump(
    query: (sql: string, params: unknown[]) => Promise<unknown>,
    environment: string,
  ): Promise<void> {
    await query(
      `INSERT INTO tapyard.prompt_fragment_generations (environment, generation) VALUES ($1, 1)
       ON CONFLICT (environment) DO UPDATE SET generation = prompt_fragment_generations.generation + 1`,
      [environment],
    );
  }
}
