import { Controller, Get, HttpCode, Param, ParseIntPipe, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CodegenEntry, CodegenService, VersionItem } from '@tapyard/codegen';
import { ValidationError } from '@tapyard/core';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment, RequestSignal } from '../http/environment.decorator';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { pipelineInPath } from '../auth/scopes';
import {
  CodegenEntriesDto,
  CodegenEntryDto,
  CodegenVersionDto,
  CodegenVersionScriptDto,
  RegenerateQueryDto,
} from './codegen-scripts.dto';

const CONTRACT =
  'Scripts follow the script contract (README "CodeGen scripts"): data-quality.py defines check(rows) returning ' +
  'None or a reason per row; transformation.py declares OUTPUT_COLUMNS and defines transform(rows) returning a ' +
  'row (or None) per row. Standard library only, no network, run sandboxed per batch.';

@ApiTags('codegen scripts')
@Controller('pipelines/:name/codegen-scripts')
export class CodegenScriptsController {
  constructor(private readonly codegen: CodegenService) {}

  @Get()
  @Requires('pipeline:read', pipelineInPath('name'))
  @ApiOperation({
    summary: "A pipeline's CodeGen scripts (null for a kind without instruction)",
    description: CONTRACT,
  })
  @ApiOkResponse({ type: CodegenEntriesDto })
  @ApiErrors(404, { 502: 'The code repository could not be reached' })
  entries(
    @RequestEnvironment() env: string,
    @Param('name') name: string,
  ): Promise<Record<string, CodegenEntry | null>> {
    return this.codegen.entries(env, name);
  }

  @Get(':kind/versions')
  @Requires('pipeline:read', pipelineInPath('name'))
  @ApiOperation({ summary: 'Version history of a script, newest first' })
  @ApiOkResponse({ type: [CodegenVersionDto] })
  @ApiErrors(404, { 400: 'Unknown kind' })
  versions(
    @RequestEnvironment() env: string,
    @Param('name') name: string,
    @Param('kind') kind: string,
  ): Promise<VersionItem[]> {
    return this.codegen.versions(env, name, kind);
  }

  @Get(':kind/versions/:version')
  @Requires('pipeline:read', pipelineInPath('name'))
  @ApiOperation({
    summary: 'One version of a script with its text',
    description: 'What the console compares (a diff of two versions) before a restore.',
  })
  @ApiOkResponse({ type: CodegenVersionScriptDto })
  @ApiErrors({ 400: 'Unknown kind', 404: 'Unknown pipeline or version' })
  version(
    @RequestEnvironment() env: string,
    @Param('name') name: string,
    @Param('kind') kind: string,
    @Param(
      'version',
      new ParseIntPipe({ exceptionFactory: () => new ValidationError('version must be an integer') }),
    )
    version: number,
  ): Promise<CodegenVersionScriptDto> {
    return this.codegen.versionWithScript(env, name, kind, version);
  }

  @Post(':kind/regenerate')
  @HttpCode(200)
  @Requires('pipeline:update', pipelineInPath('name'))
  @ApiOperation({
    summary: 'Write the script again with the model',
    description:
      'The new script goes live only after the static checks and a dry run on the rows the pipeline last landed; ' +
      'otherwise the entry is pending with the reason and the live script keeps running. In a code repository a ' +
      'file edited since the recorded commit is not overwritten (the entry carries `conflict`) unless overwrite=true.',
  })
  @ApiOkResponse({ type: CodegenEntryDto })
  @ApiErrors(404, {
    400: 'Unknown kind, or no instruction of that kind',
    502: 'The model or the store failed',
  })
  regenerate(
    @RequestEnvironment() env: string,
    @Param('name') name: string,
    @Param('kind') kind: string,
    @Query() q: RegenerateQueryDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<CodegenEntry> {
    return this.codegen.regenerate(env, name, kind, q.overwrite === true, 'regenerate', signal);
  }

  @Post(':kind/pull')
  @HttpCode(200)
  @Requires('pipeline:update', pipelineInPath('name'))
  @ApiOperation({
    summary: "Adopt the repository branch head's file (origin `repository`)",
    description:
      'Clears a conflict. The file must meet the script contract (422 otherwise, nothing changed).',
  })
  @ApiOkResponse({ type: CodegenEntryDto })
  @ApiErrors(404, 422, 502, { 400: 'Unknown kind, no instruction, or not in a repository' })
  pull(
    @RequestEnvironment() env: string,
    @Param('name') name: string,
    @Param('kind') kind: string,
  ): Promise<CodegenEntry> {
    return this.codegen.pull(env, name, kind);
  }

  @Post(':kind/versions/:version/restore')
  @HttpCode(200)
  @Requires('pipeline:update', pipelineInPath('name'))
  @ApiOperation({
    summary: 'Restore an earlier version as the new latest version',
    description:
      'Spec rules 1-5: `origin` restore-version, the model that wrote it kept; the object replaced or a new ' +
      'commit; `noop: true` with nothing written when the text equals the live script. Audited as ' +
      '`codegen-script-restore-version:<kind>` (agent-policy action pipeline:update:codegen-scripts).',
  })
  @ApiOkResponse({ type: CodegenEntryDto })
  @ApiErrors({
    400: 'Unknown kind, or no instruction of that kind',
    404: 'Unknown pipeline or version',
    409: 'The repository file was edited since the recorded commit',
    422: 'Written for a different instruction, source schema or script contract',
    502: 'The script could not be stored; nothing changed',
  })
  restore(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('name') name: string,
    @Param('kind') kind: string,
    @Param(
      'version',
      new ParseIntPipe({ exceptionFactory: () => new ValidationError('version must be an integer') }),
    )
    version: number,
  ): Promise<CodegenEntry> {
    return this.codegen.restore(env, name, kind, version, { actor: access.identity.name });
  }
}
