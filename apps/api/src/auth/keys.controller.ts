import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import {
  ApiKeysService,
  FULL_ACCESS,
  Grantor,
  IssueRequest,
  TenantsService,
  assertMayGrant,
  validateTenant,
} from '@tapyard/auth';
import { CONFIG, TapyardConfig, ValidationError } from '@tapyard/core';
import { ErrorBodyDto } from '../http/error-body.dto';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { Access } from './access';
import { Requires } from './access-rule';
import { IssueKeyDto, IssuedKeyDto, KeyViewDto, RevokedKeyDto, RotatedKeyDto } from './auth.dto';

const LABEL_PARAM = 'label';

@ApiTags('api keys')
@Controller('keys')
export class KeysController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly tenants: TenantsService,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  @Get()
  @Requires('key:read')
  @ApiOperation({ summary: 'API keys of the environment (admin); values are never returned' })
  @ApiOkResponse({ type: [KeyViewDto] })
  list(@RequestEnvironment() env: string): Promise<KeyViewDto[]> {
    return this.keys.list(env);
  }

  @Post()
  @Requires('key:create')
  @ApiOperation({
    summary: 'Issue an API key (admin)',
    description:
      'Body `{label, template}` or `{label, capabilities}`. The value (`tpy_…`, 256 random bits) is in this response ' +
      'only; Tapyard keeps a SHA-256 digest in the secret `<environment>/api-keys`. Templates: see the README.',
  })
  @ApiCreatedResponse({ type: IssuedKeyDto })
  @ApiBadRequestResponse({
    type: ErrorBodyDto,
    description: 'Bad or reserved label, unknown template, bad capability',
  })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The label exists (revoked labels stay taken)' })
  async issue(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: IssueKeyDto,
  ): Promise<IssuedKeyDto> {
    const target = this.targetEnvironment(env, body.tenant, access.identity);
    const issued = await this.keys.issue(target, body.label, grantOf(body), access.identity);
    await this.mapToTenant(target, issued.hash);
    return { label: issued.label, key: issued.key, capabilities: issued.capabilities };
  }

  @Post(`:${LABEL_PARAM}/rotate`)
  @HttpCode(200)
  @Requires('key:update')
  @ApiOperation({ summary: 'Rotate a key (admin): new value shown once; the old value fails from now on' })
  @ApiOkResponse({ type: RotatedKeyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The key is revoked' })
  async rotate(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param(LABEL_PARAM) label: string,
  ): Promise<RotatedKeyDto> {
    const rotated = await this.keys.rotate(env, label, access.identity);
    await this.mapToTenant(env, rotated.hash);
    return { label: rotated.label, key: rotated.key };
  }

  @Delete(`:${LABEL_PARAM}`)
  @Requires('key:delete')
  @ApiOperation({ summary: 'Revoke a key (admin), permanently' })
  @ApiOkResponse({ type: RevokedKeyDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async revoke(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param(LABEL_PARAM) label: string,
  ): Promise<RevokedKeyDto> {
    await this.keys.revoke(env, label, access.identity);
    return { status: 'revoked', label };
  }

  /**
   * `tenant` lets the operator environment issue a tenant's first key; tenants issue only their own.
   * What a caller holds applies in its own environment, so reaching into a tenant takes full access.
   */
  private targetEnvironment(env: string, tenant: string | undefined, grantor: Grantor): string {
    if (tenant === undefined) return env;
    if (!this.config.auth.multiTenant)
      throw new ValidationError('tenant is only accepted with MULTI_TENANT=true');
    if (env !== this.config.environment) {
      throw new ValidationError('tenant may only be given by callers of the operator environment');
    }
    validateTenant(tenant);
    if (tenant === this.config.environment) {
      throw new ValidationError(
        'tenant names the operator environment: issue keys of the operator environment without tenant',
      );
    }
    assertMayGrant(grantor, [FULL_ACCESS], `issue keys into tenant '${tenant}'`);
    return tenant;
  }

  private async mapToTenant(environment: string, digest: string): Promise<void> {
    if (this.config.auth.multiTenant && environment !== this.config.environment) {
      await this.tenants.map(digest, environment);
    }
  }
}

function grantOf(body: IssueKeyDto): IssueRequest {
  if ((body.template === undefined) === (body.capabilities === undefined)) {
    throw new ValidationError('give exactly one of template or capabilities');
  }
  return body.template !== undefined
    ? { template: body.template }
    : { capabilities: body.capabilities ?? [] };
}
