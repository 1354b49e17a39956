import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AuthModule, RunKeysModule } from '@tapyard/auth';
import { MetadataModule } from '@tapyard/metadata';
import { ConfigFilesModule } from '@tapyard/configfiles';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { Logger } from 'pino';
import { ConfigModule, LoggingModule, METRICS_REGISTRY, TapyardConfig } from '@tapyard/core';
import { DatabaseModule } from '@tapyard/database';
import { HealthModule, Readiness } from '@tapyard/health';
import { QueueModule } from '@tapyard/queue';
import { SecretsModule } from '@tapyard/secrets';
import { AttachmentTools, IntakeModule } from '@tapyard/intake';
import { DESTINATION_PLUGINS, DestinationsModule } from '@tapyard/destinations';
import { PipelinesController } from './pipelines/pipelines.controller';
import { CodegenScriptsController } from './pipelines/codegen-scripts.controller';
import { StatusController } from './pipelines/status.controller';
import { JobsController } from './pipelines/jobs.controller';
import { PlatformController } from './platform/platform.controller';
import { SecretsController } from './secrets/secrets.controller';
import { ApiMetrics } from './metrics/metrics';
import { METRICS, MetricsController } from './metrics/metrics.controller';
import { ProbesController } from './probes/probes.controller';
import { AccessGuard } from './auth/access.guard';
import { AuthController } from './auth/auth.controller';
import { KeysController } from './auth/keys.controller';
import { UsersController } from './auth/users.controller';
import { MetadataController } from './metadata/metadata.controller';
import { ConfigController } from './configfiles/config.controller';
import { TapsModule } from '@tapyard/taps';
import { PipelineDeletionModule } from '@tapyard/pipeline-deletion';
import { TapsController } from './taps/taps.controller';
import { VECTOR_STORE_PLUGINS, VectorStoreRegistryModule, VectorStoresModule } from '@tapyard/vector-stores';
import { SearchController } from './search/search.controller';
import { AI_METRICS_REGISTRY, AiModule } from '@tapyard/ai';
import { TapAuthoringModule } from '@tapyard/tap-authoring';
import { CodegenModule } from '@tapyard/codegen';
import { IncidentsModule } from '@tapyard/incidents';
import { IncidentThresholdsController, IncidentsController } from './incidents/incidents.controller';
import { TapAuthoringController } from './taps/tap-authoring.controller';
import { PromptFragmentsController } from './taps/prompt-fragments.controller';
import { NlQueryModule } from '@tapyard/nl-query';
import { PipelineAdviceModule } from '@tapyard/pipeline-advice';
import { QueryController } from './query/query.controller';
import { AssistantController } from './assistant/assistant.controller';
import { AssistantModule } from '@tapyard/assistant';
import { PipelineTools } from '@tapyard/pipelines';
import { CodegenTools } from '@tapyard/codegen';
import { StatusTools } from '@tapyard/status';
import { TapTools } from '@tapyard/taps';
import { TapAuthoringTools } from '@tapyard/tap-authoring';
import { VectorSearchTools } from '@tapyard/vector-stores';
import { NlQueryTools } from '@tapyard/nl-query';
import { MetadataTools } from '@tapyard/metadata';

/** The process's Prometheus registry, for libraries that record their own metrics (model calls). */
@Module({})
class MetricsRegistryModule {}

/** The HTTP application: controllers only; domain logic comes from libs/*. */
@Module({})
export class ApiModule {
  static forRoot(config: TapyardConfig, logger: Logger, metrics: ApiMetrics): DynamicModule {
    return {
      module: ApiModule,
      imports: [
        ConfigModule.forRoot(config),
        {
          module: MetricsRegistryModule,
          global: true,
          providers: [
            { provide: AI_METRICS_REGISTRY, useValue: metrics.registry },
            { provide: METRICS_REGISTRY, useValue: metrics.registry },
          ],
          exports: [AI_METRICS_REGISTRY, METRICS_REGISTRY],
        },
        LoggingModule.forRoot(logger),
        DestinationsModule.forRoot(DESTINATION_PLUGINS),
        VectorStoreRegistryModule.forRoot(VECTOR_STORE_PLUGINS),
        DatabaseModule,
        QueueModule,
        SecretsModule,
        HealthModule,
        IntakeModule,
        AuthModule,
        RunKeysModule,
        MetadataModule,
        ObjectStoreModule,
        ConfigFilesModule,
        TapsModule,
        PipelineDeletionModule,
        VectorStoresModule,
        AiModule,
        TapAuthoringModule,
        CodegenModule,
        IncidentsModule,
        NlQueryModule,
        PipelineAdviceModule,
        AssistantModule,
      ],
      controllers: [
        PlatformController,
        SecretsController,
        PipelinesController,
        CodegenScriptsController,
        IncidentsController,
        IncidentThresholdsController,
        StatusController,
        JobsController,
        MetricsController,
        ProbesController,
        AuthController,
        KeysController,
        UsersController,
        MetadataController,
        ConfigController,
        TapsController,
        TapAuthoringController,
        PromptFragmentsController,
        QueryController,
        AssistantController,
        SearchController,
      ],
      providers: [
        { provide: METRICS, useValue: metrics },
        Readiness,
        { provide: APP_GUARD, useClass: AccessGuard },
        // The assistant's tools, declared beside their domains; the assistant finds them by @AssistantToolSet().
        PipelineTools,
        AttachmentTools,
        CodegenTools,
        StatusTools,
        TapTools,
        TapAuthoringTools,
        VectorSearchTools,
        NlQueryTools,
        MetadataTools,
      ],
    };
  }
}
