import { Module } from '@nestjs/common';
import { SecretsModule } from '@tapyard/secrets';
import { AvailabilityService } from './availability.service';
import { HealthService } from './health.service';

@Module({
  imports: [SecretsModule],
  providers: [HealthService, AvailabilityService],
  exports: [HealthService, AvailabilityService],
})
export class HealthModule {}
