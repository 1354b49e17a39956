import { DynamicModule, Module } from '@nestjs/common';
import { Logger } from 'pino';
import { ConfigModule, LoggingModule, METRICS_REGISTRY, TapyardConfig } from '@tapyard/core';
import { Readiness } from '@tapyard/health';
import { DatabaseModule } from '@tapyard/database';
import { DESTINATION_PLUGINS, DestinationsModule } from '@tapyard/destinations';
import { QueueModule } from '@tapyard/queue';
import { IngestionModule } from '@tapyard/ingestion';
import { SecretsModule } from '@tapyard/secrets';
import { IngestProcessor } from './ingest.processor';
import { MaintenanceProcessor } from './maintenance.processor';
import { TenantWorkers } from './tenant-workers';
import { RawBucketPoller } from './raw-bucket-poller';
import { StagingSweeper } from './staging-sweeper';
import { PreparedSweeper } from './prepared-sweeper';
import { TapsModule } from '@tapyard/taps';
import { DocumentsModule } from '@tapyard/documents';
import { VECTOR_STORE_PLUGINS, VectorStoreRegistryModule } from '@tapyard/vector-stores';
import { TapScheduler } from './tap-scheduler';
import { InFlightJobs } from './in-flight';
import { WorkerDrain } from './worker-drain';
import { WorkerHttp } from './worker-http';
import { WorkerMetrics, workerRegistry } from './worker-metrics';

/** The process's Prometheus registry, for the libraries that count their own events. */
@Module({})
class MetricsRegistryModule {}

/**
 * The worker: queue processors, and an operations port (probes and metrics). Start as many as you
 * like.
 */
@Module({})
export class WorkerModule {
  /** `extra`: modules a test worker adds (test/support/test-worker.ts); the app adds none. */
  static forRoot(config: TapyardConfig, logger: Logger, extra: DynamicModule[] = []): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        ConfigModule.forRoot(config),
        {
          module: MetricsRegistryModule,
          global: true,
          providers: [{ provide: METRICS_REGISTRY, useValue: workerRegistry(config.environment) }],
          exports: [METRICS_REGISTRY],
        },
        LoggingModule.forRoot(logger),
        DestinationsModule.forRoot(DESTINATION_PLUGINS),
        VectorStoreRegistryModule.forRoot(VECTOR_STORE_PLUGINS),
        DatabaseModule,
        QueueModule,
        IngestionModule,
        SecretsModule,
        TapsModule,
        DocumentsModule,
        ...extra,
      ],
      providers: [
        InFlightJobs,
        MaintenanceProcessor,
        IngestProcessor,
        TenantWorkers,
        RawBucketPoller,
        StagingSweeper,
        PreparedSweeper,
        TapScheduler,
        WorkerMetrics,
        Readiness,
        WorkerDrain,
        WorkerHttp,
      ],
    };
  }
}
