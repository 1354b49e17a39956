import { Module } from '@nestjs/common';
import { StatusRepository } from './status.repository';
import { StatusService } from './status.service';
import { CLOCK, systemClock } from './status.types';

@Module({
  providers: [StatusRepository, StatusService, { provide: CLOCK, useValue: systemClock }],
  exports: [StatusService, StatusRepository, CLOCK],
})
export class StatusModule {}
