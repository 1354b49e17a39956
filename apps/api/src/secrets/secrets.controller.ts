import { Body, Controller, Delete, Get, Param, Put } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { SecretsService } from '@tapyard/secrets';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestEnvironment } from '../http/environment.decorator';
import { Requires } from '../auth/access-rule';
import { SecretDto, StatusOkDto } from './secrets.dto';

const NAME_PARAM = {
  name: 'name',
  description: "Secret name (A-Z a-z 0-9 . _ - /, URL-encode '/'), scoped to the current environment",
  example: 'warehouse',
};

@ApiTags('secrets')
@Controller('secrets')
export class SecretsController {
  constructor(private readonly secrets: SecretsService) {}

  @Get()
  @Requires('secret:read')
  @ApiOperation({
    summary: 'Names of the secrets of the current environment',
    description:
      'The platform’s access state (`<environment>/api-keys`, `api-key-mappings`) is never listed, read, written ' +
      'or deleted here; keys and tenant mappings are managed through /keys.',
  })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'string' }, example: ['qdrant', 'warehouse'] } })
  list(@RequestEnvironment() env: string): Promise<string[]> {
    return this.secrets.list(env);
  }

  @Get(':name')
  @Requires('secret:read')
  @ApiOperation({ summary: 'One secret, sensitive fields masked' })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ type: SecretDto })
  @ApiErrors({ 404: 'No secret of that name in this environment (always for the access state)' })
  get(@RequestEnvironment() env: string, @Param('name') name: string): Promise<SecretDto> {
    return this.secrets.get(env, name);
  }

  @Put(':name')
  @Requires('secret:update')
  @ApiOperation({
    summary: 'Create or replace a secret',
    description:
      'Body: a JSON object of field names to string values. Stored encrypted (AES-256-GCM). A Snowflake secret ' +
      '(`account` with `warehouse`) must name Snowflake itself: `accessUrl`, when given, an account URL under ' +
      'snowflakecomputing.com, .cn or .mil, or an endpoint on TAP_EGRESS_ALLOW.',
  })
  @ApiParam(NAME_PARAM)
  @ApiBody({
    schema: {
      type: 'object',
      additionalProperties: { type: 'string' },
      example: { username: 'loader', password: 's3cr3t', host: 'db.internal' },
    },
  })
  @ApiOkResponse({ type: StatusOkDto })
  @ApiErrors({
    400:
      'Not an object of strings, a bad name, a name of the access state (`*/api-keys`, `api-key-mappings`), or a ' +
      'Snowflake `account` or `accessUrl` that does not name Snowflake (`details` names the field)',
  })
  async put(
    @RequestEnvironment() env: string,
    @Param('name') name: string,
    @Body() fields: unknown,
  ): Promise<StatusOkDto> {
    await this.secrets.put(env, name, fields);
    return { status: 'ok' };
  }

  @Delete(':name')
  @Requires('secret:delete')
  @ApiOperation({ summary: 'Delete a secret' })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ type: StatusOkDto })
  @ApiErrors({ 404: 'No secret of that name in this environment (always for the access state)' })
  async remove(@RequestEnvironment() env: string, @Param('name') name: string): Promise<StatusOkDto> {
    await this.secrets.delete(env, name);
    return { status: 'ok' };
  }
}
