import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { ToolSpec } from '@tapyard/ai';
import { ValidationError, validateAs } from '@tapyard/core';
import { AnsweredAction } from './pending-actions';
import { ActingTool, AssistantTool, AssistantToolSet, ToolContext, ToolSet } from './tool';
import { toolSchema } from './tool-schema';

/**
 * The assistant's tools: gathered at boot from every @AssistantToolSet() provider (each domain declares
 * its own beside its services), each call's arguments validated against the tool's DTO as a route
 * body is, and checked against the caller's capabilities as the matching route checks them (ToolGate).
 */
@Injectable()
export class AssistantTools implements OnModuleInit {
  private tools: AssistantTool[] = [];
  private specList: ToolSpec[] = [];

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    const tools = this.discovery
      .getProviders({ metadataKey: AssistantToolSet.KEY })
      .flatMap((wrapper) => (wrapper.instance as ToolSet | undefined)?.assistantTools() ?? []);
    const names = new Set<string>();
    for (const t of tools) {
      if (names.has(t.name)) throw new Error(`two assistant tools are named '${t.name}'`);
      names.add(t.name);
    }
    this.tools = tools;
    this.specList = tools.map(({ name, description, args }) => ({
      name,
      description,
      parameters: toolSchema(args),
    }));
  }

  specs(): ToolSpec[] {
    return this.specList;
  }

  /** The DTO class of each tool, by name. */
  argumentTypes(): Map<string, new () => object> {
    return new Map(this.tools.map((t) => [t.name, t.args]));
  }

  /** Whether the tool acts (so waits for the user's confirmation); an unknown name does not. */
  acts(name: string): boolean {
    return this.tools.some((t) => t.name === name && t.effect === 'act');
  }

  /** Runs a read-only tool. */
  async run(ctx: ToolContext, name: string, args: Record<string, unknown>): Promise<unknown> {
    const tool = this.find(name);
    if (tool.effect !== 'read') throw new Error(`tool '${name}' acts: it runs only once confirmed`);
    return tool.run(ctx, await validateAs(tool.args, args));
  }

  /** Checks an acting call as it would run, without running it: the user is asked only about calls that may. */
  async check(ctx: ToolContext, name: string, args: Record<string, unknown>): Promise<void> {
    await this.prepare(ctx, name, args);
  }

  /** Performs a confirmed call with the arguments the user saw, checked again as the caller is now. */
  async perform(ctx: ToolContext, action: AnsweredAction): Promise<unknown> {
    if (!action.approved) throw new Error('a declined action is never performed');
    const act = await this.prepare(ctx, action.call.name, action.call.arguments);
    return act();
  }

  private async prepare(
    ctx: ToolContext,
    name: string,
    args: Record<string, unknown>,
  ): Promise<() => Promise<unknown>> {
    const tool = this.acting(name);
    return tool.prepare(ctx, await validateAs(tool.args, args));
  }

  private find(name: string): AssistantTool {
    const tool = this.tools.find((t) => t.name === name);
    if (!tool) throw new ValidationError(`there is no tool '${name.slice(0, 60)}'`);
    return tool;
  }

  private acting(name: string): ActingTool<object> {
    const tool = this.find(name);
    if (tool.effect !== 'act') throw new Error(`tool '${name}' does not act`);
    return tool;
  }
}
