import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { RequestAccess } from '../http/environment.decorator';
import { ApiMetrics } from './metrics';

export const METRICS = Symbol('ApiMetrics');

@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(METRICS) private readonly metrics: ApiMetrics) {}

  @Get()
  @Requires('platform:read')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiOperation({
    summary: 'Prometheus metrics (outside /api/v1)',
    description:
      'The whole process: in multi-tenant mode only an operator key with full access (`*:*`) reads it (403 otherwise).',
  })
  @ApiOkResponse({ description: 'Prometheus text exposition format', schema: { type: 'string' } })
  scrape(@RequestAccess() access: Access): Promise<string> {
    return this.metrics.exposition(access.viewer);
  }
}
