import { Module } from '@nestjs/common';
import { PipelinesRepository } from './pipelines.repository';
import { PipelinesService } from './pipelines.service';

@Module({ providers: [PipelinesRepository, PipelinesService], exports: [PipelinesService] })
export class PipelinesModule {}
