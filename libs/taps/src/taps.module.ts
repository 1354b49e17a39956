import { Module } from '@nestjs/common';
import { RunKeysModule } from '@tapyard/auth';
import { CodeRepositoryModule } from '@tapyard/code-repository';
import { IncidentsModule } from '@tapyard/incidents';
import { IntakeModule } from '@tapyard/intake';
import { QueueModule } from '@tapyard/queue';
import { SecretsModule } from '@tapyard/secrets';
import { TapEnvironment } from './tap-environment';
import { TapProcesses } from './tap-processes';
import { TapExecutor } from './tap-executor';
import { TapRunner } from './tap-runner.service';
import { TapsRepository } from './taps.repository';
import { TapsService } from './taps.service';
import { LedgerService } from './ledger.service';
import { TapScriptRepository } from './tap-script-repository';
import { TapPolicy } from './tap-policy';
import { TapIncidentSource } from './tap-incidents';
import { TapStates } from './tap-states';

@Module({
  imports: [CodeRepositoryModule, IncidentsModule, IntakeModule, QueueModule, SecretsModule, RunKeysModule],
  providers: [
    TapsRepository,
    TapsService,
    TapScriptRepository,
    TapRunner,
    TapExecutor,
    TapProcesses,
    TapEnvironment,
    LedgerService,
    TapPolicy,
    TapIncidentSource,
    TapStates,
  ],
  exports: [TapsService, TapRunner, TapsRepository, LedgerService, TapPolicy, TapStates],
})
export class TapsModule {}
