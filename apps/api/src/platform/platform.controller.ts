import { Controller, Get, Inject } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { AvailabilityService, HealthService, ServiceStatus } from '@tapyard/health';
import { RequestEnvironment } from '../http/environment.decorator';
import { Requires, SignedIn } from '../auth/access-rule';
import { HEALTH_EXAMPLE, ServiceStatusDto, VersionInfoDto } from './platform.dto';

@ApiTags('platform')
@ApiExtraModels(ServiceStatusDto)
@Controller()
export class PlatformController {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly health: HealthService,
    private readonly availability: AvailabilityService,
  ) {}

  @Get('version')
  @SignedIn()
  @ApiOperation({
    summary: 'Server version, environment and authentication flags',
    description:
      'Any identity may read it; with USE_API_KEYS=true that means a key, like every other route (spec ' +
      'Authentication rule 3). A console learns the flags before signing in from `GET /auth/mode`.',
  })
  @ApiOkResponse({ type: VersionInfoDto })
  version(@RequestEnvironment() environment: string): VersionInfoDto {
    const c = this.config;
    return {
      version: c.version,
      environment,
      multiTenant: String(c.auth.multiTenant),
      hosted: String(c.hosted),
      useUserAuth: String(c.auth.useUserAuth),
      useApiKeys: String(c.auth.useApiKeys),
      postgresDatabase: c.database.name,
      mongodbDatabase: c.auth.multiTenant ? environment : c.mongodb.database,
    };
  }

  @Get('health/services')
  @Requires('platform:read')
  @ApiOperation({
    summary: 'Live status of every backing service',
    description:
      'Probes run in parallel, each bounded by HEALTH_TIMEOUT_MS (default 2 s), so the answer comes in about 2.5 s ' +
      'even when every peer is down. `postgres`, `redis`, `mongodb`, `minio`, `activemq`, `kafka` are always listed; ' +
      'vector stores are probed when a secret named after them exists, otherwise `not_configured`; their addresses ' +
      'pass the egress policy (http/https, no private address unless in TAP_EGRESS_ALLOW, no redirects). ' +
      '`sandbox` reports the isolation tap scripts run under (`down`: runs are refused, with the reason). `ai` is ' +
      "the model provider of the secret 'ai' (`not_configured` without it; `up` names provider and model when its " +
      'model list answers).',
  })
  @ApiOkResponse({
    schema: {
      type: 'object',
      additionalProperties: { $ref: getSchemaPath(ServiceStatusDto) },
      example: HEALTH_EXAMPLE,
    },
  })
  services(@RequestEnvironment() environment: string): Promise<Record<string, ServiceStatus>> {
    return this.health.all(environment);
  }

  @Get('destinations/available')
  @Requires('platform:read')
  @ApiOperation({
    summary: 'Destinations usable now',
    description:
      '`postgres`, `mongodb`, `objectstore`, `kafka`, `activemq` when live-probed reachable; `snowflake`, `databricks` ' +
      'when a secret of this environment holds a complete credential set (see README).',
  })
  @ApiOkResponse({
    schema: { type: 'array', items: { type: 'string' }, example: ['postgres', 'objectstore'] },
  })
  destinations(@RequestEnvironment() environment: string): Promise<string[]> {
    return this.availability.destinations(environment);
  }

  @Get('vector-stores/available')
  @Requires('platform:read')
  @ApiOperation({ summary: 'Vector stores that are configured and answering (2 s probe each)' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'string' }, example: ['chroma', 'pgvector'] } })
  vectorStores(@RequestEnvironment() environment: string): Promise<string[]> {
    return this.availability.vectorStores(environment);
  }
}
