import { Type as Constructor } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { ErrorDetail, TapyardConfig, didYouMean, invalidRequest, validationProblems } from '@tapyard/core';
import type { DataLocation, DestinationDefaults } from './destination-confinement';
import type { PipelineDefinition } from '@tapyard/model';

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
  /**
   * The tables or collections its loads write rows into that another pipeline may name too: a load
   * there can replace, overwrite or add to that pipeline's rows, so a save needs pipeline:update over
   * every pipeline already loading there. Left out by sections whose loads write only places of their
   * own (a job's folder of files) or that reach a place only through a secret (secret:use).
   */
  locations?(section: Stored): DataLocation[];
  /** The destination plug-ins that load what this section configures (`database` → postgres or mongodb). */
  loadedBy(section: Stored): string;
  /** The name of the secret holding the section's credentials, when it has one. */
  secretName?(section: Stored): string | null;
}

/**
 * The body of `destination`: one optional object per registered section. Its sections are checked by
 * DestinationSections (the set is known only once the app has registered its plug-ins), and the
 * OpenAPI document lists them at boot.
 */
export class DestinationDto {
  [key: string]: unknown;
}

/**
 * The keys of `destination` that are options of the load, not sections (DestinationOptionsDto,
 * checked by toDefinition).
 */
export const DESTINATION_OPTIONS: readonly string[] = ['writeMode', 'primaryKey'];

/** The options the API's ValidationPipe validates bodies with; a section is held to the same. */
const STRICT = { whitelist: true, forbidNonWhitelisted: true } as const;

/**
 * The destination sections the app registered (DestinationsModule.forRoot provides the one instance,
 * from the plug-ins it is given at boot): they validate, complete, confine and name the secrets of
 * a pipeline's `destination`. Nothing here is global: two apps in one process may register their own.
 */
export class DestinationSections {
  private readonly byKey = new Map<string, DestinationSection>();

  // Sections are heterogeneous by nature: each has its own DTO and stored form.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  constructor(sections: readonly DestinationSection<any, any>[]) {
    for (const section of sections) {
      const known = this.byKey.get(section.key);
      // Two plug-ins may read one section (postgres and mongodb both read `database`).
      if (known === section) continue;
      if (known) throw new Error(`destination section '${section.key}' is registered twice`);
      this.byKey.set(section.key, section);
    }
    if (this.byKey.size === 0) throw new Error('no destination sections are registered: a wiring mistake');
  }

  all(): DestinationSection[] {
    return [...this.byKey.values()];
  }

  /**
   * The sections a body's `destination` configures, each validated against its DTO as the API
   * validates any body (unknown properties refused) and returned as that DTO; null and absent sections
   * are left out. A 400 lists every problem, worded as the API's validation words them.
   */
  validate(destination: DestinationDto): Map<DestinationSection, object> {
    const problems: ErrorDetail[] = [];
    const keys = [...this.byKey.keys()];
    for (const key of Object.keys(destination)) {
      if (!this.byKey.has(key) && !DESTINATION_OPTIONS.includes(key)) {
        problems.push({
          field: `destination.${key}`,
          problem: `should not exist${didYouMean(key, [...keys, ...DESTINATION_OPTIONS])}: the destination sections are ${keys.join(', ')}`,
        });
      }
    }
    // In the order the sections were registered, as definitions have always been stored.
    const valid = new Map<DestinationSection, object>();
    for (const section of this.byKey.values()) {
      const value = destination[section.key];
      if (value === null || value === undefined) continue;
      if (typeof value !== 'object' || Array.isArray(value)) {
        problems.push({ field: `destination.${section.key}`, problem: 'must be an object' });
        continue;
      }
      const dto = plainToInstance(section.dto, value);
      const errors = validateSync(dto, STRICT);
      if (errors.length === 0) valid.set(section, dto);
      else problems.push(...validationProblems(errors, `destination.${section.key}`));
    }
    if (problems.length > 0) throw invalidRequest(problems);
    return valid;
  }

  /**
   * The option keys of a `destination` body (DESTINATION_OPTIONS) as `dto`, with what is wrong with
   * them worded as validate() words it.
   */
  options<T extends object>(
    destination: DestinationDto,
    dto: Constructor<T>,
  ): { value: T; problems: ErrorDetail[] } {
    const picked = Object.fromEntries(
      DESTINATION_OPTIONS.filter((k) => destination[k] !== undefined).map((k) => [k, destination[k]]),
    );
    const value = plainToInstance(dto, picked);
    return { value, problems: validationProblems(validateSync(value, STRICT), 'destination') };
  }

  /** The sections a stored definition configures, with their stored values. */
  configured(
    destination: PipelineDefinition['destination'],
  ): { section: DestinationSection; value: unknown }[] {
    return this.all()
      .filter((s) => destination[s.key] !== undefined && destination[s.key] !== null)
      .map((section) => ({ section, value: destination[section.key] }));
  }

  /** The destination plug-ins a pipeline loads into (`postgres`, `objectstore`, ...), in section order. */
  loadersOf(def: PipelineDefinition): string[] {
    return this.configured(def.destination).map(({ section, value }) => section.loadedBy(value));
  }

  /** Where a pipeline's loads write rows another pipeline may also name (each section's `locations`). */
  locationsOf(destination: PipelineDefinition['destination']): DataLocation[] {
    return this.configured(destination).flatMap(({ section, value }) => section.locations?.(value) ?? []);
  }

  /**
   * The secrets a `destination` body names (any section's `secretName`): saving it hands their
   * credentials to the addresses the pipeline gives, so the caller needs `secret:use`.
   */
  namedSecrets(destination: Record<string, unknown> | undefined | null): string[] {
    if (!destination) return [];
    return this.all()
      .map((s) => (destination[s.key] as { secretName?: unknown } | undefined | null)?.secretName)
      .filter((n): n is string => typeof n === 'string' && n.trim() !== '');
  }

  /**
   * Throws DestinationNotAllowedError when a pipeline of `environment` may not load into (or drop)
   * `destination`. Checked when a pipeline is saved, and again by the worker before it loads and by
   * the delete before it drops, so a pipeline stored before a rule existed cannot use a forbidden place.
   * Each section's plug-in says what its section may name.
   */
  assertAllowed(
    config: TapyardConfig,
    environment: string,
    destination: PipelineDefinition['destination'],
  ): void {
    for (const { section, value } of this.configured(destination))
      section.confine(config, environment, value);
  }
}
