import { Module } from '@nestjs/common';
import { AiModule } from '@tapyard/ai';
import { SecretsModule } from '@tapyard/secrets';
import { AvailabilityService } from './availability.service';
import { HealthService } from './health.service';

@Module({
  imports: [SecretsModule, AiModule],
  providers: [HealthService, AvailabilityService],
  exports: [HealthService, AvailabilityService],
})
export class HealthModule {}
