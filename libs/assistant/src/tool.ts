import { DiscoveryService } from '@nestjs/core';
import type { ToolGate } from './tool-gate';

export interface ToolContext {
  env: string;
  gate: ToolGate;
  /** Whose attachments the tools may read. */
  owner: string;
  signal: AbortSignal;
}

interface ToolBase<A extends object> {
  name: string;
  description: string;
  /**
   * The arguments' DTO: the model is sent the JSON Schema generated from it (toolSchema), and a call's
   * arguments are validated against it as a route body is (validateAs) before the tool sees them.
   */
  args: new () => A;
}

/** Looks things up, changes nothing: runs as soon as the model asks. */
export interface ReadTool<A extends object> extends ToolBase<A> {
  effect: 'read';
  run(ctx: ToolContext, args: A): Promise<unknown>;
}

/**
 * Runs code, saves, registers, loads, restores or hands a secret on: runs only once the user confirms
 * it. `prepare` checks the call (capabilities, rules) and performs nothing; the function it returns
 * performs it.
 */
export interface ActingTool<A extends object> extends ToolBase<A> {
  effect: 'act';
  prepare(ctx: ToolContext, args: A): Promise<() => Promise<unknown>>;
}

// `any`: a registry holds tools of many argument types; each is only ever called with its own DTO.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AssistantTool<A extends object = any> = ReadTool<A> | ActingTool<A>;

/** Declares one tool, its argument type inferred from its DTO. */
export function tool<A extends object>(spec: AssistantTool<A>): AssistantTool<A> {
  return spec;
}

/** A domain's tools: a provider marked with @AssistantToolSet() and listed in the app's providers. */
export interface ToolSet {
  assistantTools(): AssistantTool[];
}

/** Marks a ToolSet provider; the assistant's registry finds every one through Nest's discovery. */
export const AssistantToolSet = DiscoveryService.createDecorator<void>();
