import { DataSource, DataSourceOptions } from 'typeorm';
import { Logger } from 'pino';
import { TapyardConfig, errorMessage } from '@tapyard/core';
import { SecretEntity } from '@tapyard/secrets';
import { CreateSecrets1763788800000 } from './migrations/1763788800000-create-secrets';
import { PipelinesAndStatus1763875200000 } from './migrations/1763875200000-pipelines-and-status';
import { UsersAndKeyUsage1763961600000 } from './migrations/1763961600000-users-and-key-usage';
import { RawObjects1764048000000 } from './migrations/1764048000000-raw-objects';
import { Taps1764134400000 } from './migrations/1764134400000-taps';
import { TapGrantsAndJobScopes1764220800000 } from './migrations/1764220800000-tap-grants-and-job-scopes';
import { UserSessionEpochs1764220800000 } from './migrations/1764220800000-user-session-epochs';
import { CreatedObjects1764220800000 } from './migrations/1764220800000-created-objects';
import { VectorContainers1764307200000 } from './migrations/1764307200000-vector-containers';
import { PromptFragments1764393600000 } from './migrations/1764393600000-prompt-fragments';
import { SinkLoads1764480000000 } from './migrations/1764480000000-sink-loads';
import { CodegenScripts1764566400000 } from './migrations/1764566400000-codegen-scripts';
import { Incidents1764652800000 } from './migrations/1764652800000-incidents';
import { PipelineLoadIds1764739200000 } from './migrations/1764739200000-pipeline-load-ids';
import { TapStates1764825600000 } from './migrations/1764825600000-tap-states';
import { IncidentSettings1764912000000 } from './migrations/1764912000000-incident-settings';
import { JobRowCounts1764998400000 } from './migrations/1764998400000-job-row-counts';
import { RecordEvents1765084800000 } from './migrations/1765084800000-record-events';
import { RecordEventsOnce1765776000000 } from './migrations/1765776000000-record-events-once';
import { CodegenGenerations1765171200000 } from './migrations/1765171200000-codegen-generations';
import { PipelineLocationsChecked1765257600000 } from './migrations/1765257600000-pipeline-locations-checked';
import { TapGrantsDocumentUpload1765344000000 } from './migrations/1765344000000-tap-grants-document-upload';
import { PipelineLocations1765430400000 } from './migrations/1765430400000-pipeline-locations';
import { PipelineMayAdopt1765516800000 } from './migrations/1765516800000-pipeline-may-adopt';
import { PipelineLocationsVector1765603200000 } from './migrations/1765603200000-pipeline-locations-vector';
import { CreatedObjectsMarked1765689600000 } from './migrations/1765689600000-created-objects-marked';

/** Postgres schema holding Tapyard's own metadata; never a destination (see @tapyard/pipelines PLATFORM_SCHEMAS). */
export const METADATA_SCHEMA = 'tapyard';

/** Every entity and migration is listed here: no globbing, so the build output is what runs. */
export const ENTITIES = [SecretEntity];
export const MIGRATIONS = [
  CreateSecrets1763788800000,
  PipelinesAndStatus1763875200000,
  UsersAndKeyUsage1763961600000,
  RawObjects1764048000000,
  Taps1764134400000,
  TapGrantsAndJobScopes1764220800000,
  UserSessionEpochs1764220800000,
  CreatedObjects1764220800000,
  VectorContainers1764307200000,
  PromptFragments1764393600000,
  SinkLoads1764480000000,
  CodegenScripts1764566400000,
  Incidents1764652800000,
  PipelineLoadIds1764739200000,
  TapStates1764825600000,
  IncidentSettings1764912000000,
  JobRowCounts1764998400000,
  RecordEvents1765084800000,
  CodegenGenerations1765171200000,
  PipelineLocationsChecked1765257600000,
  TapGrantsDocumentUpload1765344000000,
  PipelineLocations1765430400000,
  PipelineMayAdopt1765516800000,
  PipelineLocationsVector1765603200000,
  CreatedObjectsMarked1765689600000,
  RecordEventsOnce1765776000000,
];

// Any constant works as long as every Tapyard process uses the same one.
const MIGRATION_LOCK_ID = 7_421_001;

export function dataSourceOptions(config: TapyardConfig): DataSourceOptions {
  return {
    type: 'postgres',
    url: config.database.url,
    schema: METADATA_SCHEMA,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsRun: false,
    synchronize: false,
    logging: false,
    // A new connection may take seconds on a saturated host (a job failed on a 5 s bound in CI, load ~14 on
    // 2 cores); a server that refuses fails at once whatever this is. As the destination pools (pg-pools.ts).
    extra: { max: config.database.poolSize, connectionTimeoutMillis: 10_000, application_name: 'tapyard' },
  };
}

/**
 * Applies pending migrations under a Postgres advisory lock, so API and worker processes that boot
 * together never race on the same migration.
 */
export async function runMigrations(dataSource: DataSource, logger?: Logger): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await runner.query(`CREATE SCHEMA IF NOT EXISTS "${METADATA_SCHEMA}"`);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    for (const m of applied) logger?.info({ migration: m.name }, 'migration applied');
    return applied.map((m) => m.name);
  } catch (err) {
    throw new Error(`database migration failed: ${errorMessage(err)}`, { cause: err });
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await runner.release();
  }
}

export async function openDataSource(options: DataSourceOptions, logger?: Logger): Promise<DataSource> {
  const ds = new DataSource(options);
  try {
    await ds.initialize();
  } catch (err) {
    throw new Error(`cannot connect to PostgreSQL (DATABASE_URL): ${errorMessage(err)}`, { cause: err });
  }
  await runMigrations(ds, logger);
  return ds;
}
