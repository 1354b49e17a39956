import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access, ApiKeysService, IssueRequest, TenantsService } from '@tapyard/auth';
import { ValidationError } from '@tapyard/core';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { Requires } from './access-rule';
import {
  IssueKeyDto,
  IssuedKeyDto,
  KeyViewDto,
  RevokedKeyDto,
  RotatedKeyDto,
  TenantMappedDto,
  TenantMappingDto,
  TenantUnmappingDto,
} from './auth.dto';
import { StatusOkDto } from '../secrets/secrets.dto';

const GRANT_REFUSED = 'The caller does not hold every capability involved (the message names the first ones)';

const LABEL_PARAM = 'label';

@ApiTags('api keys')
@Controller('keys')
export class KeysController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly tenants: TenantsService,
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
      'only; Tapyard keeps an HMAC-SHA-256 digest (keyed from the master key) in its key map. Templates: see the README. ' +
      'The caller must hold every capability it grants: the same resource:action (or a wildcard), unscoped or with the ' +
      'same scope; `*:*` only from `*:*`. `tenant` (multi-tenant mode, operator environment) needs `*:*`.',
  })
  @ApiCreatedResponse({ type: IssuedKeyDto })
  @ApiErrors({
    400: 'Bad or reserved label, unknown template, bad capability, tenant not allowed',
    403: GRANT_REFUSED,
    409: 'The label exists (revoked labels stay taken)',
  })
  async issue(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: IssueKeyDto,
  ): Promise<IssuedKeyDto> {
    const target = this.tenants.issuingEnvironment(env, body.tenant, access.identity);
    return this.keys.issue(target, body.label, grantOf(body), access.identity);
  }

  @Post(`:${LABEL_PARAM}/rotate`)
  @HttpCode(200)
  @Requires('key:update')
  @ApiOperation({
    summary: 'Rotate a key (admin): new value shown once; the old value fails from now on',
    description: 'The caller receives a working value, so it must hold every capability of the key.',
  })
  @ApiOkResponse({ type: RotatedKeyDto })
  @ApiErrors(404, { 403: GRANT_REFUSED, 409: 'The key is revoked' })
  async rotate(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param(LABEL_PARAM) label: string,
  ): Promise<RotatedKeyDto> {
    return this.keys.rotate(env, label, access.identity);
  }

  @Delete(`:${LABEL_PARAM}`)
  @Requires('key:delete')
  @ApiOperation({
    summary: 'Revoke a key (admin), permanently',
    description:
      'The caller must hold every capability of the key (a key:delete key cannot cut off bootstrap).',
  })
  @ApiOkResponse({ type: RevokedKeyDto })
  @ApiErrors(404, { 403: GRANT_REFUSED })
  async revoke(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param(LABEL_PARAM) label: string,
  ): Promise<RevokedKeyDto> {
    await this.keys.revoke(env, label, access.identity);
    return { status: 'revoked', label };
  }

  @Post('tenant-mappings')
  @HttpCode(200)
  @Requires('key:create')
  @ApiOperation({
    summary: 'Map a key value made elsewhere to a tenant (multi-tenant mode, operator, full access)',
    description:
      'Adds `HMAC(key) → tenant` to `api-key-mappings`: the key then acts with full access inside that tenant only ' +
      '(identity `tenant-mapping`), unless the tenant holds a key record for it. This replaces writing the mapping ' +
      'secret through /secrets, which is refused.',
  })
  @ApiOkResponse({ type: TenantMappedDto })
  @ApiErrors({
    400: 'Not multi-tenant, not the operator, short key, bad or operator tenant',
    403: GRANT_REFUSED,
  })
  async mapKey(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: TenantMappingDto,
  ): Promise<TenantMappedDto> {
    await this.tenants.mapValue(env, access.identity, body.key, body.tenant);
    return { status: 'ok', tenant: body.tenant };
  }

  @Post('tenant-mappings/remove')
  @HttpCode(200)
  @Requires('key:delete')
  @ApiOperation({
    summary: 'Remove every tenant mapping of a key value (multi-tenant mode, operator, full access)',
    description: 'Keys issued into a tenant are revoked with DELETE /keys/{label} by the tenant instead.',
  })
  @ApiOkResponse({ type: StatusOkDto })
  @ApiErrors({ 404: 'The value is not mapped', 403: GRANT_REFUSED })
  async unmapKey(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: TenantUnmappingDto,
  ): Promise<StatusOkDto> {
    await this.tenants.unmapValue(env, access.identity, body.key);
    return { status: 'ok' };
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
