import { Module } from '@nestjs/common';
import { CodegenModule } from '@tapyard/codegen';
import { IncidentsModule } from '@tapyard/incidents';
import { ConfigFilesModule } from '@tapyard/configfiles';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { FileNotifier } from './file-notifier';
import { PipelinesModule } from '@tapyard/pipelines';
import { QueueModule } from '@tapyard/queue';
import { StatusModule } from '@tapyard/status';
import { IngestionRunner } from './ingestion.runner';
import { Spool } from './spool';
import { Staging } from './staging';
import { StageThreadPool } from './stage-thread/stage-thread';
import { SchemaDiscoveryService } from './schema-discovery.service';
import { UploadService } from './upload.service';

@Module({
  imports: [
    CodegenModule,
    // Listens to script changes and landed jobs wherever scripts run (API and workers).
    IncidentsModule,
    QueueModule,
    PipelinesModule,
    StatusModule,
    ConfigFilesModule,
    ObjectStoreModule,
  ],
  providers: [
    Spool,
    Staging,
    UploadService,
    IngestionRunner,
    SchemaDiscoveryService,
    FileNotifier,
    StageThreadPool,
  ],
  exports: [
    Spool,
    Staging,
    UploadService,
    IngestionRunner,
    FileNotifier,
    ObjectStoreModule,
    SchemaDiscoveryService,
    PipelinesModule,
    StatusModule,
  ],
})
export class IngestionModule {}
