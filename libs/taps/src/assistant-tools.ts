import { Injectable } from '@nestjs/common';
import { AssistantTool, AssistantToolSet, IntArg, NoArgs, TextArg, ToolSet, tool } from '@tapyard/assistant';
import { ScopeTarget } from '@tapyard/auth';
import { TapErrorCode } from './tap-errors';
import { TapPolicy } from './tap-policy';
import { TapRunner } from './tap-runner.service';
import { tapScope } from './tap-scope';
import { TapsRepository } from './taps.repository';
import { TapsService } from './taps.service';

export class TapNameArgs {
  @TextArg('tap name')
  name!: string;
}

export class TestTapArgs {
  @TextArg('tap name')
  name!: string;

  @TextArg('inline script (optional)', { optional: true })
  script?: string;

  @IntArg('SERVICE_TAP_TEST_LIMIT', { min: 0, max: 1_000_000, optional: true })
  testLimit?: number;
}

/** The stored tap a tool names, for ToolGate (none when absent: the tool answers its own 404). */
export async function tapTarget(
  repo: TapsRepository,
  environment: string,
  name: string,
): Promise<ScopeTarget[]> {
  const found = await repo.find(environment, name);
  return found
    ? [
        {
          fields: tapScope(found),
          hiddenMessage: `tap '${name}' does not exist`,
          hiddenCode: TapErrorCode.NotFound,
        },
      ]
    : [];
}

/** A stored tap, or one about to be (uncataloged, of `tapType`), as the routes' tapInBody / tapNamedInBody check it. */
export async function tapTargetOrNew(
  repo: TapsRepository,
  environment: string,
  name: string,
  tapType: string = 'structured',
): Promise<ScopeTarget[]> {
  const stored = await tapTarget(repo, environment, name);
  return stored.length > 0
    ? stored
    : [
        {
          fields: tapScope({ catalog: null, tapType }),
          hiddenMessage: `tap '${name}' does not exist`,
          hiddenCode: TapErrorCode.NotFound,
        },
      ];
}

@Injectable()
@AssistantToolSet()
export class TapTools implements ToolSet {
  constructor(
    private readonly taps: TapsService,
    private readonly repo: TapsRepository,
    private readonly runner: TapRunner,
    private readonly policy: TapPolicy,
  ) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'list_taps',
        effect: 'read',
        description: 'List the taps the user may read.',
        args: NoArgs,
        run: async (ctx) => {
          const access = ctx.gate.check('list_taps', 'tap:read', 'filtered');
          return access.filter(await this.taps.list(ctx.env), 'read', 'tap', tapScope);
        },
      }),
      tool({
        name: 'get_tap',
        effect: 'read',
        description: 'One tap with its script.',
        args: TapNameArgs,
        run: async (ctx, { name }) => {
          ctx.gate.check('get_tap', 'tap:read', await tapTarget(this.repo, ctx.env, name));
          return this.taps.getWithScript(ctx.env, name);
        },
      }),
      tool({
        name: 'test_tap',
        effect: 'act',
        description:
          'Test a saved tap (or an inline script for it, which runs without any secret or platform rights) in the sandbox: at most 20 ' +
          'records, nothing saved.',
        args: TestTapArgs,
        prepare: async (ctx, { name, script, testLimit = 20 }) => {
          const access = ctx.gate.check(
            'test_tap',
            'tap:run',
            await tapTargetOrNew(this.repo, ctx.env, name),
          );
          if (script === undefined) {
            // The stored code as it is, with its secret: what tap:run allows on the route too.
            return async () => (await this.runner.testAs(access, ctx.env, { name }, testLimit)).result;
          }
          // Code the model wrote may come from whatever it read: it never gets a secret, even confirmed
          // by a holder of secret:use (who can save the tap to hand it one), nor rights on the platform.
          const stored = await this.repo.find(ctx.env, name);
          const note = stored?.secretName
            ? `an inline script from the assistant runs without secrets or platform rights: secret '${stored.secretName}' of tap '${name}' was not given to it`
            : 'an inline script from the assistant runs without secrets or platform rights';
          return async () => {
            const body = { name, script, secretName: null };
            const tested = await this.runner.testAs(access, ctx.env, body, testLimit, 'model');
            return { ...tested.result, note };
          };
        },
      }),
      tool({
        name: 'run_tap',
        effect: 'act',
        description: 'Run a saved tap now: its records go to its target pipeline. Returns the run result.',
        args: TapNameArgs,
        prepare: async (ctx, { name }) => {
          const access = ctx.gate.check('run_tap', 'tap:run', await tapTarget(this.repo, ctx.env, name));
          // Refused before the user is asked, as the route would refuse it (the run checks again).
          await this.policy.assertMayRun(access, ctx.env, await this.taps.get(ctx.env, name));
          return () => this.runner.run(ctx.env, name, { mode: 'run', trigger: 'manual', access });
        },
      }),
    ];
  }
}
