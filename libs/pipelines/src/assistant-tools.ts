import { Injectable } from '@nestjs/common';
import { AssistantTool, AssistantToolSet, NoArgs, TextArg, ToolSet, tool } from '@tapyard/assistant';
import { ScopeTarget } from '@tapyard/auth';
import { PipelineErrorCode } from '@tapyard/model';
import { pipelineScope } from './pipeline-scope';
import { PipelinesService } from './pipelines.service';

export class PipelineNameArgs {
  @TextArg('pipeline name')
  name!: string;
}

/** The stored pipeline a tool names, for ToolGate (none when absent: the tool answers its own 404). */
export async function pipelineTarget(
  pipelines: PipelinesService,
  environment: string,
  name: string,
): Promise<ScopeTarget[]> {
  const found = await pipelines.find(environment, name);
  return found
    ? [
        {
          fields: pipelineScope(found.definition),
          hiddenMessage: `pipeline '${name}' does not exist`,
          hiddenCode: PipelineErrorCode.NotFound,
        },
      ]
    : [];
}

@Injectable()
@AssistantToolSet()
export class PipelineTools implements ToolSet {
  constructor(private readonly pipelines: PipelinesService) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'list_pipelines',
        effect: 'read',
        description:
          'List the pipelines the user may read: name, catalog, source type, destinations, version.',
        args: NoArgs,
        run: async (ctx) => {
          const access = ctx.gate.check('list_pipelines', 'pipeline:read', 'filtered');
          const all = await this.pipelines.listWithDefinitions(ctx.env);
          return access
            .filter(all, 'read', 'pipeline', (p) => pipelineScope(p.definition))
            .map((p) => p.item);
        },
      }),
      tool({
        name: 'get_pipeline',
        effect: 'read',
        description: 'The full configuration of one pipeline.',
        args: PipelineNameArgs,
        run: async (ctx, { name }) => {
          ctx.gate.check(
            'get_pipeline',
            'pipeline:read',
            await pipelineTarget(this.pipelines, ctx.env, name),
          );
          const p = await this.pipelines.get(ctx.env, name);
          return { ...p.definition, version: p.version };
        },
      }),
    ];
  }
}
