import { BlastRadiusReader } from './blast-radius';
import { Module } from '@nestjs/common';
import { CodegenModule } from '@tapyard/codegen';
import { PipelinesModule } from '@tapyard/pipelines';
import { StatusModule } from '@tapyard/status';
import { IncidentsRepository } from './incidents.repository';
import { IncidentsService } from './incidents.service';
import { IncidentThresholds } from './incident-thresholds';
import { IncidentEvidence } from './incident-evidence';

@Module({
  imports: [CodegenModule, PipelinesModule, StatusModule],
  providers: [IncidentsService, IncidentsRepository, BlastRadiusReader, IncidentThresholds, IncidentEvidence],
  exports: [IncidentsService],
})
export class IncidentsModule {}
