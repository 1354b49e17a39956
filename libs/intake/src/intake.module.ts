import { Module } from '@nestjs/common';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { PipelinesModule } from '@tapyard/pipelines';
import { QueueModule } from '@tapyard/queue';
import { StatusModule } from '@tapyard/status';
import { FileNotifier } from './file-notifier';
import { SchemaDiscoveryService } from './schema-discovery.service';
import { Spool } from './spool';
import { Staging } from './staging';
import { StagingSignals } from './staging-signals';
import { UploadService } from './upload.service';

/**
 * What arrives: uploads streamed into staging, object-store drops noticed, samples read for schema
 * discovery. The API and every worker hold it; only workers hold the runner that loads (IngestionModule).
 */
@Module({
  imports: [QueueModule, PipelinesModule, StatusModule, ObjectStoreModule],
  providers: [Spool, Staging, StagingSignals, UploadService, SchemaDiscoveryService, FileNotifier],
  exports: [
    Spool,
    Staging,
    UploadService,
    FileNotifier,
    SchemaDiscoveryService,
    ObjectStoreModule,
    PipelinesModule,
    StatusModule,
  ],
})
export class IntakeModule {}
