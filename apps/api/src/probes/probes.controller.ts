import { Controller, Get, HttpCode, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { Response } from 'express';
import { Readiness } from '@tapyard/health';
import { Public } from '../auth/access-rule';

type ProbeBody = { status: 'ok' } | { status: 'unavailable' };

/**
 * Liveness and readiness for load balancers and orchestrators (outside /api/v1): no key needed, and
 * the answer names nothing (which peer is down is for `/api/v1/health/services`, behind a key).
 */
@ApiTags('operations')
@Controller()
export class ProbesController {
  constructor(private readonly readiness: Readiness) {}

  @Get('livez')
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Liveness: 200 while the process serves requests (outside /api/v1)' })
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  livez(): ProbeBody {
    return { status: 'ok' };
  }

  @Get('readyz')
  @Public()
  @ApiOperation({
    summary:
      'Readiness: 200 while PostgreSQL and Redis answer; 503 when one does not, or while shutting down',
  })
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  @ApiServiceUnavailableResponse({ schema: { example: { status: 'unavailable' } } })
  async readyz(@Res({ passthrough: true }) res: Response): Promise<ProbeBody> {
    if (await this.readiness.ready()) return { status: 'ok' };
    res.status(503);
    return { status: 'unavailable' };
  }
}
