import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { ConfigFilesService } from '@tapyard/configfiles';
import { Requires } from '../auth/access-rule';
import { RequestEnvironment } from '../http/environment.decorator';
import { ApiErrors } from '../http/api-errors.decorator';
import {
  ConfigUploadFormDto,
  GenerateSchemaDto,
  GeneratedSchemaDto,
  StoredConfigFileDto,
} from './config.dto';

@ApiTags('configuration files')
@Controller('config')
export class ConfigController {
  constructor(private readonly files: ConfigFilesService) {}

  @Post('upload')
  @HttpCode(200)
  @Requires('config:create')
  @ApiOperation({
    summary: 'Store a configuration file',
    description:
      'Stored at `<env>-config/<type>/<filename>` in the object store (up to 5 MB). A .json validation schema must ' +
      'compile as a JSON Schema and apply at most 16 patterns (pattern, patternProperties) and 4,096 subschemas, a ' +
      '$ref counting its target each time it is used; an .xsd must start with an xs:schema element.',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: ConfigUploadFormDto })
  @ApiOkResponse({ type: StoredConfigFileDto })
  @ApiErrors(400, { 503: 'Object store not configured or down' })
  upload(@RequestEnvironment() env: string, @Req() req: Request): Promise<StoredConfigFileDto> {
    return this.files.upload(env, req);
  }

  @Post('generate-schema')
  @HttpCode(200)
  @Requires('config:create')
  @ApiOperation({
    summary: 'Generate a JSON Schema (draft 2020-12) or an XSD from sample data, and store it',
    description:
      'Deterministic (no AI): types, required fields (present in every sample record), arrays, nesting, date and ' +
      'date-time formats. Stored in the validation-schema location as `<name>.json` or `<name>.xsd`.',
  })
  @ApiOkResponse({ type: GeneratedSchemaDto })
  @ApiErrors({ 400: 'Unreadable sample, bad name or type' })
  generate(@RequestEnvironment() env: string, @Body() body: GenerateSchemaDto): Promise<GeneratedSchemaDto> {
    return this.files.generateSchema(env, body.type, body.name, body.sampleData);
  }
}
