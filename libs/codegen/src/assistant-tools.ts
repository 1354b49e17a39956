import { Injectable } from '@nestjs/common';
import {
  AssistantTool,
  AssistantToolSet,
  EnumArg,
  IntArg,
  ObjectArg,
  TextArg,
  ToolSet,
  tool,
} from '@tapyard/assistant';
import { validateAs } from '@tapyard/core';
import {
  PipelineConfigDto,
  PipelinePolicy,
  PipelinesService,
  pipelineBodyScope,
  pipelineTarget,
} from '@tapyard/pipelines';
import { CodegenService } from './codegen.service';
import { CODEGEN_KINDS, CodegenKind } from '@tapyard/scripts';

export class RegisterPipelineArgs {
  @ObjectArg('the pipeline configuration')
  config!: Record<string, unknown>;
}

export class CodegenScriptsArgs {
  @TextArg('pipeline name')
  pipeline!: string;
}

export class RestoreCodegenScriptArgs {
  @TextArg('pipeline name')
  pipeline!: string;

  @EnumArg(CODEGEN_KINDS)
  kind!: CodegenKind;

  @IntArg('the version number to restore', { min: 1, max: 1_000_000 })
  version!: number;
}

/**
 * The tools on pipeline scripts, and register_pipeline, here because a saved pipeline's scripts are
 * (re)written after the save, as POST /pipeline does.
 */
@Injectable()
@AssistantToolSet()
export class CodegenTools implements ToolSet {
  constructor(
    private readonly pipelines: PipelinesService,
    private readonly pipelinePolicy: PipelinePolicy,
    private readonly codegen: CodegenService,
  ) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'register_pipeline',
        effect: 'act',
        description: 'Create or update a pipeline from a full configuration (as POST /pipeline takes it).',
        args: RegisterPipelineArgs,
        prepare: async (ctx, { config: body }) => {
          const name = typeof body.name === 'string' ? body.name.trim() : '';
          const incoming = {
            fields: pipelineBodyScope(body),
            hiddenMessage: `pipeline '${name}' cannot be saved in that catalog`,
          };
          const access = ctx.gate.check('register_pipeline', 'pipeline:update', [
            ...(name ? await pipelineTarget(this.pipelines, ctx.env, name) : []),
            incoming,
          ]);
          // Refused before the user is asked, as the route would refuse it (the save checks again).
          this.pipelinePolicy.assertMaySave(access, {
            destination: body.destination as PipelineConfigDto['destination'],
          });
          const dto = await validateAs(PipelineConfigDto, body);
          // Refused now, as the route refuses the body, not once the caller has confirmed.
          this.pipelines.checkDestination(dto.destination);
          await this.pipelines.checkLoadingBeside(ctx.env, dto, access);
          return async () => {
            const saved = await this.pipelines.save(ctx.env, dto, access);
            this.codegen.afterSave(ctx.env, saved.name);
            return { status: 'ok', ...saved };
          };
        },
      }),
      tool({
        name: 'get_codegen_scripts',
        effect: 'read',
        description:
          "A pipeline's AI-written data-quality and transformation scripts (status, version, model, storage, drift) " +
          'with the version history of each.',
        args: CodegenScriptsArgs,
        run: async (ctx, { pipeline }) => {
          const target = await pipelineTarget(this.pipelines, ctx.env, pipeline);
          ctx.gate.check('get_codegen_scripts', 'pipeline:read', target);
          const entries = await this.codegen.entries(ctx.env, pipeline);
          const versions: Record<string, unknown> = {};
          for (const [kind, entry] of Object.entries(entries)) {
            if (entry) versions[kind] = await this.codegen.versions(ctx.env, pipeline, kind);
          }
          return { entries, versions };
        },
      }),
      tool({
        name: 'restore_codegen_script_version',
        effect: 'act',
        description:
          "Make an earlier version of a pipeline's data-quality or transformation script live again, as a new " +
          'version (no model call). Refused when it was written for another instruction or schema.',
        args: RestoreCodegenScriptArgs,
        prepare: async (ctx, { pipeline, kind, version }) => {
          // Agent-policy action pipeline:update:codegen-scripts: the route's capability, and its audit.
          const access = ctx.gate.check(
            'restore_codegen_script_version',
            'pipeline:update',
            await pipelineTarget(this.pipelines, ctx.env, pipeline),
          );
          return () =>
            this.codegen.restore(ctx.env, pipeline, kind, version, { actor: access.identity.name });
        },
      }),
    ];
  }
}
