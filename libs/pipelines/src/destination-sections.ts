import { Type as Constructor } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ValidateNested } from 'class-validator';
import { OptionalNotNull, TapyardConfig } from '@tapyard/core';
import type { DestinationDefaults } from './destination-confinement';
import type { PipelineDefinition } from './pipeline.types';

/**
 * One section of a pipeline's `destination` (`database`, `objectStore`, `kafka`, ...), declared by
 * the destination plug-in that reads it: its DTO (validation and OpenAPI schema), how defaults are
 * filled in, where it may point, and which secret holds its credentials. The pipelines domain knows
 * no section by name: it validates, completes and confines whatever the plug-ins registered.
 */
export interface DestinationSection<Dto extends object = object, Stored = unknown> {
  key: string;
  dto: Constructor<Dto>;
  description: string;
  /** The stored form: the validated DTO with every default filled in. */
  complete(dto: Dto, defaults: DestinationDefaults): Stored;
  /**
   * Throws DestinationNotAllowedError when the environment may not load into (or drop) what the
   * section names. Checked on save, before a load and before a delete.
   */
  confine(config: TapyardConfig, environment: string, section: Stored): void;
  /** The destination plug-ins that load what this section configures (`database` → postgres or mongodb). */
  loadedBy(section: Stored): string;
  /** The name of the secret holding the section's credentials, when it has one. */
  secretName?(section: Stored): string | null;
}

const sections = new Map<string, DestinationSection>();

/**
 * The body class of `destination`: one optional nested property per registered section, added when
 * the section registers (before the API validates or documents anything).
 */
export class DestinationDto {
  [key: string]: unknown;
}

export function registerDestinationSection<Dto extends object, Stored>(
  section: DestinationSection<Dto, Stored>,
): void {
  const known = sections.get(section.key);
  if (known === (section as unknown as DestinationSection)) return;
  if (known) throw new Error(`destination section '${section.key}' is registered twice`);
  sections.set(section.key, section as unknown as DestinationSection);
  const target = DestinationDto.prototype;
  ApiPropertyOptional({ type: section.dto, description: section.description })(target, section.key);
  OptionalNotNull()(target, section.key);
  ValidateNested()(target, section.key);
  Type(() => section.dto)(target, section.key);
}

/** Every registered section; empty means no destination plug-in was loaded (a wiring mistake). */
export function destinationSections(): DestinationSection[] {
  if (sections.size === 0) {
    throw new Error('no destination sections are registered: the app must import @tapyard/destinations');
  }
  return [...sections.values()];
}

/** The sections a definition configures, with their stored values. */
export function configuredSections(
  destination: PipelineDefinition['destination'],
): { section: DestinationSection; value: unknown }[] {
  return destinationSections()
    .filter((s) => destination[s.key] !== undefined && destination[s.key] !== null)
    .map((section) => ({ section, value: destination[section.key] }));
}

/**
 * The secrets a `destination` body names (any section's `secretName`): saving it hands their
 * credentials to the addresses the pipeline gives, so the caller needs `secret:use`.
 */
export function namedSecrets(destination: Record<string, unknown> | undefined | null): string[] {
  if (!destination) return [];
  return destinationSections()
    .map((s) => (destination[s.key] as { secretName?: unknown } | undefined | null)?.secretName)
    .filter((n): n is string => typeof n === 'string' && n.trim() !== '');
}
