import { BlastRadiusReader } from './blast-radius';
import { Module } from '@nestjs/common';
import { CodegenModule } from '@tapyard/codegen';
import { PipelinesModule } from '@tapyard/pipelines';
import { StatusModule } from '@tapyard/status';
import { IncidentsRepository } from './incidents.repository';
import { IncidentsService } from './incidents.service';

@Module({
  imports: [CodegenModule, PipelinesModule, StatusModule],
  providers: [IncidentsService, IncidentsRepository, BlastRadiusReader],
  exports: [IncidentsService],
})
export class IncidentsModule {}
