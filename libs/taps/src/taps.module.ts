import { Module } from '@nestjs/common';
import { RunKeysModule } from '@tapyard/auth';
import { CodeRepositoryModule } from '@tapyard/code-repository';
import { IngestionModule } from '@tapyard/ingestion';
import { QueueModule } from '@tapyard/queue';
import { SecretsModule } from '@tapyard/secrets';
import { TapEnvironment } from './tap-environment';
import { TapProcesses } from './tap-processes';
import { TapRunner } from './tap-runner.service';
import { TapsRepository } from './taps.repository';
import { TapsService } from './taps.service';
import { LedgerService } from './ledger.service';
import { TapScriptRepository } from './tap-script-repository';
import { TapPolicy } from './tap-policy';
import { TapStates } from './tap-states';

@Module({
  imports: [CodeRepositoryModule, IngestionModule, QueueModule, SecretsModule, RunKeysModule],
  providers: [
    TapsRepository,
    TapsService,
    TapScriptRepository,
    TapRunner,
    TapProcesses,
    TapEnvironment,
    LedgerService,
    TapPolicy,
    TapStates,
  ],
  exports: [TapsService, TapRunner, TapsRepository, LedgerService, TapPolicy, TapStates],
})
export class TapsModule {}
