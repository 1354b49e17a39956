import { DynamicModule, Module } from '@nestjs/common';
import { Logger } from 'pino';
import { ConfigModule, LoggingModule, TapyardConfig } from '@tapyard/core';
import { DatabaseModule } from '@tapyard/database';
import { QueueModule } from '@tapyard/queue';
import { IngestionModule } from '@tapyard/ingestion';
import { SecretsModule } from '@tapyard/secrets';
import { IngestProcessor } from './ingest.processor';
import { MaintenanceProcessor } from './maintenance.processor';
import { TenantWorkers } from './tenant-workers';
import { RawBucketPoller } from './raw-bucket-poller';
import { StagingSweeper } from './staging-sweeper';
import { TapsModule } from '@tapyard/taps';
import { DocumentsModule } from '@tapyard/documents';
import { TapScheduler } from './tap-scheduler';

/** The worker: queue processors only, no HTTP. Start as many as you like. */
@Module({})
export class WorkerModule {
  static forRoot(config: TapyardConfig, logger: Logger): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        DatabaseModule,
        QueueModule,
        IngestionModule,
        SecretsModule,
        TapsModule,
        DocumentsModule,
      ],
      providers: [
        MaintenanceProcessor,
        IngestProcessor,
        TenantWorkers,
        RawBucketPoller,
        StagingSweeper,
        TapScheduler,
      ],
    };
  }
}
