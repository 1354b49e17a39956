import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SecretEntity } from './secret.entity';
import { SecretsRepository } from './secrets.repository';
import { SecretsService } from './secrets.service';

@Module({
  imports: [TypeOrmModule.forFeature([SecretEntity])],
  providers: [SecretsRepository, SecretsService],
  exports: [SecretsService],
})
export class SecretsModule {}
