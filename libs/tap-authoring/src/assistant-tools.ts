import { Injectable } from '@nestjs/common';
import { AssistantTool, AssistantToolSet, EnumArg, TextArg, ToolSet, tool } from '@tapyard/assistant';
import { TapsRepository, tapTargetOrNew } from '@tapyard/taps';
import { TapAuthoringService } from './tap-authoring.service';

export class GenerateTapScriptArgs {
  @TextArg('tap name')
  tapName!: string;

  @TextArg('what the tap fetches')
  description!: string;

  @EnumArg(['structured', 'document'], { optional: true })
  tapType?: 'structured' | 'document';
}

export class FixTapScriptArgs {
  @TextArg('tap name')
  tapName!: string;

  @TextArg('the script')
  script!: string;

  @TextArg('the error', { optional: true })
  error?: string;

  @TextArg('the logs', { optional: true })
  logs?: string;
}

@Injectable()
@AssistantToolSet()
export class TapAuthoringTools implements ToolSet {
  constructor(
    private readonly authoring: TapAuthoringService,
    private readonly taps: TapsRepository,
  ) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'generate_tap_script',
        effect: 'act',
        description:
          'Write a tap script from a description (checked, stored as a new version; save the tap to adopt it).',
        args: GenerateTapScriptArgs,
        prepare: async (ctx, { tapName, description, tapType }) => {
          const target = await tapTargetOrNew(this.taps, ctx.env, tapName, tapType);
          const access = ctx.gate.check('generate_tap_script', 'tap:update', target);
          return () =>
            this.authoring.generate(ctx.env, { tapName, description, tapType }, access, ctx.signal);
        },
      }),
      tool({
        name: 'fix_tap_script',
        effect: 'act',
        description:
          'Rewrite a failing tap script from its error and logs (checked, stored as a new version).',
        args: FixTapScriptArgs,
        prepare: async (ctx, { tapName, script, error = '', logs = '' }) => {
          const access = ctx.gate.check(
            'fix_tap_script',
            'tap:update',
            await tapTargetOrNew(this.taps, ctx.env, tapName),
          );
          return () => this.authoring.fix(ctx.env, { tapName, script, error, logs }, access, ctx.signal);
        },
      }),
    ];
  }
}
