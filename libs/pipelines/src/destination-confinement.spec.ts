import { TapyardConfig } from '@tapyard/core';
import { DESTINATION_PLUGINS } from '@tapyard/destinations';
import { DestinationNotAllowedError, confinementOf, destinationDefaults } from './destination-confinement';
import { DestinationSections } from './destination-sections';
import { PipelineDefinition } from '@tapyard/model';

const config = {
  environment: 'ops',
  database: { url: 'postgres://x@h/platform', name: 'platform', poolSize: 1 },
} as unknown as TapyardConfig;

const pg = (dbName: string, schema: string, table = 'sales'): PipelineDefinition['destination'] => ({
  database: { dbName, schema, table, usePostgres: true },
});
const mongoDb = (dbName: string, table = 'docs'): PipelineDefinition['destination'] => ({
  database: { dbName, schema: 'ignored', table, usePostgres: false },
});
const files = (bucket: string | null): PipelineDefinition['destination'] => ({
  objectStore: { bucket, prefix: 'out', format: 'csv' },
});
// The sections the rules belong to, as the apps register them.
const sections = new DestinationSections(DESTINATION_PLUGINS.flatMap((p) => p.sections));

const refusal = (env: string, d: PipelineDefinition['destination']): string | null => {
  try {
    sections.assertAllowed(config, env, d);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(DestinationNotAllowedError);
    return (err as Error).message;
  }
};

describe('destination confinement', () => {
  it('keeps every environment out of the platform schemas, in any database', () => {
    for (const schema of [
      'tapyard',
      'tapyard_meta',
      'TAPYARD',
      'pg_catalog',
      'pg_temp_3',
      'information_schema',
    ]) {
      expect(refusal('ops', pg('other_db', schema))).toMatch(/belongs to the platform$/);
    }
    expect(refusal('ops', pg('platform', 'public'))).toBeNull();
    expect(refusal('ops', pg('warehouse', 'analytics'))).toBeNull();
  });

  it('confines a tenant to schema t_<tenant> of the platform database', () => {
    expect(confinementOf(config, 'acme-eu')).toEqual({
      tenant: true,
      postgres: { database: 'platform', schema: 't_acme-eu' },
      mongoDatabase: 'acme-eu',
      outputBucket: 'acme-eu-output',
    });
    expect(refusal('acme-eu', pg('platform', 't_acme-eu'))).toBeNull();
    for (const d of [pg('platform', 'public'), pg('platform', 't_acme'), pg('warehouse', 't_acme-eu')]) {
      expect(refusal('acme-eu', d)).toMatch(
        /this tenant's tables live in schema 't_acme-eu' of database 'platform'$/,
      );
    }
  });

  it('refuses reserved MongoDB databases and collections, and other tenants’ databases', () => {
    for (const db of ['admin', 'config', 'local', 'tapyard_internal', 'Admin']) {
      expect(refusal('ops', mongoDb(db))).toMatch(/is reserved$/);
    }
    expect(refusal('ops', mongoDb('app', '_tapyard_loads'))).toMatch(
      /collection '_tapyard_loads' is reserved/,
    );
    expect(refusal('ops', mongoDb('app', 'system.users'))).toMatch(/is reserved/);
    expect(refusal('ops', mongoDb('app'))).toBeNull();
    expect(refusal('acme', mongoDb('acme'))).toBeNull();
    expect(refusal('acme', mongoDb('beta'))).toMatch(/live in MongoDB database 'acme'$/);
  });

  it("allows only the environment's own output bucket among environments' buckets", () => {
    expect(refusal('ops', files(null))).toBeNull();
    expect(refusal('ops', files('ops-output'))).toBeNull();
    expect(refusal('ops', files('analytics'))).toBeNull();
    for (const b of ['ops-raw', 'ops-config', 'ops-taps', 'ops-staged', 'acme-output']) {
      expect(refusal('ops', files(b))).toMatch(/environments' own buckets/);
    }
    expect(refusal('acme', files(null))).toBeNull();
    expect(refusal('acme', files('acme-output'))).toBeNull();
    expect(refusal('acme', files('analytics'))).toMatch(/only to its bucket 'acme-output'$/);
  });

  it('refuses table names that a rejects companion owns or PostgreSQL would truncate', () => {
    expect(refusal('ops', pg('platform', 'public', 'sales_rejects'))).toMatch(/kept for rejected rows$/);
    expect(refusal('ops', mongoDb('app', 'docs_rejects'))).toMatch(/kept for rejected rows$/);
    expect(refusal('ops', pg('platform', 'public', 'é'.repeat(32)))).toMatch(/longer than 63 bytes$/);
  });

  it("fills a tenant's defaults with its own places, the operator's as before", () => {
    expect(destinationDefaults(config, 'acme')).toEqual({
      postgresDatabase: 'platform',
      schema: 't_acme',
      mongoDatabase: 'acme',
    });
    expect(destinationDefaults(config, 'ops')).toEqual({
      postgresDatabase: 'platform',
      schema: 'public',
      mongoDatabase: 'platform',
    });
  });
});
