import { DynamicModule, Module } from '@nestjs/common';
import { Logger } from 'pino';
import { ConfigModule, LoggingModule, TapyardConfig } from '@tapyard/core';
import { DatabaseModule } from '@tapyard/database';
import { QueueModule } from '@tapyard/queue';
import { IngestionModule } from '@tapyard/ingestion';
import { IngestProcessor } from './ingest.processor';
import { MaintenanceProcessor } from './maintenance.processor';

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
      ],
      providers: [MaintenanceProcessor, IngestProcessor],
    };
  }
}
