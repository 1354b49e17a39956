import { Injectable } from '@nestjs/common';
import { AssistantTool, AssistantToolSet, TextArg, ToolSet, tool } from '@tapyard/assistant';
import { ValidationError } from '@tapyard/core';
import { StatusService } from './status.service';

export class JobStatusArgs {
  @TextArg('a job', { optional: true })
  pipelineToken?: string;

  @TextArg('a publisher token', { optional: true })
  publisherToken?: string;
}

@Injectable()
@AssistantToolSet()
export class StatusTools implements ToolSet {
  constructor(private readonly status: StatusService) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'job_status',
        effect: 'read',
        description:
          'The rollup of a job (by pipelineToken) or of everything under a publisherToken: status, errors, progress.',
        args: JobStatusArgs,
        run: async (ctx, { pipelineToken, publisherToken }) => {
          const access = ctx.gate.check('job_status', 'job:read', 'filtered');
          const visible = <T extends { scope?: unknown }>(jobs: T[]): T[] =>
            access.filter(jobs, 'read', 'job', (j) => (j.scope ?? {}) as Record<string, string>);
          if (publisherToken) return this.status.rollupOfPublisher(ctx.env, publisherToken, visible);
          if (pipelineToken) return this.status.rollupOfJob(ctx.env, pipelineToken, visible);
          throw new ValidationError('give pipelineToken or publisherToken');
        },
      }),
    ];
  }
}
