import { Inject, Injectable } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from 'typeorm';
import type { AccessCheck } from '@tapyard/auth';
import { CONFIG, ConflictError, DomainCode, NotFoundError, TapyardConfig } from '@tapyard/core';
import { describeLocation, destinationDefaults } from './destination-confinement';
import { DestinationDto, DestinationSections } from './destination-sections';
import { PipelineConfigDto } from './dto/pipeline-config.dto';
import { toDefinition } from './pipeline-definition';
import { PipelineErrorCode, PipelineDefinition, SchemaField, StoredPipeline } from '@tapyard/model';
import { PipelineCache } from './pipeline-cache';
import { PipelinePolicy } from './pipeline-policy';
import { LOCK_NOT_AVAILABLE, PipelineRow, PipelinesRepository } from './pipelines.repository';

export interface PipelineListItem {
  name: string;
  catalog: string | null;
  sourceType: string;
  destinations: string[];
  version: number;
  updatedAt: string;
}

export class PipelineNotFoundError extends NotFoundError {
  override domainCode: DomainCode = PipelineErrorCode.NotFound;
  constructor(name: string) {
    super(`pipeline '${name}' does not exist`);
  }
}

/** A delete of the pipeline began and did not finish: nothing may load into it or change it. */
export class PipelineDeletingError extends ConflictError {
  override domainCode: DomainCode = PipelineErrorCode.Deleting;
  constructor(name: string) {
    super(
      `pipeline '${name}' is being deleted (an earlier DELETE did not finish): repeat the DELETE to complete it`,
    );
  }
}

/** How long a delete waits for a load that is creating the pipeline's tables or writing its files. */
const ROW_LOCK_TIMEOUT_MS = 5000;

/** Pipeline definitions of an environment, versioned: every change that alters one bumps its version. */
@Injectable()
export class PipelinesService {
  constructor(
    private readonly repo: PipelinesRepository,
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly sections: DestinationSections,
    private readonly policy: PipelinePolicy,
    private readonly cache: PipelineCache,
  ) {}

  /**
   * Create or update, as `access` may (the catalog was checked by the entry point, the rest here),
   * including loading beside the pipelines that already load into its tables or collections.
   */
  async save(
    environment: string,
    dto: PipelineConfigDto,
    access: AccessCheck,
  ): Promise<{ name: string; version: number }> {
    this.policy.assertMaySave(access, dto);
    const def = toDefinition(dto, destinationDefaults(this.config, environment), this.sections);
    this.sections.assertAllowed(this.config, environment, def.destination);
    const places = this.placesOf(def);
    const mayAdopt = this.policy.mayAdopt(access);
    const saved = await this.repo.transaction(async (m) => {
      await this.repo.lockSaves(environment, m);
      for (const [location, others] of await this.sharers(environment, def, m)) {
        this.policy.assertMayLoadBeside(access, location, others);
      }
      if (await this.repo.insert(environment, def, places, mayAdopt, m))
        return { name: def.name, version: 1, changed: true };
      const current = (await this.repo.find(environment, def.name, m, true)) as PipelineRow;
      if (current.deleting_since) throw new PipelineDeletingError(def.name);
      if (isDeepStrictEqual(normalise(current.definition), normalise(def))) {
        // Saving a stored definition unchanged is how it is cleared to load beside other scopes, and
        // how an admin lets it load into a place no pipeline created.
        if (current.locations_checked && (current.may_adopt || !mayAdopt))
          return { name: def.name, version: current.version, changed: false };
        await this.repo.markSaved(environment, def.name, mayAdopt, m);
        await this.repo.recordLocations(environment, def.name, current.version, places, m);
        return { name: def.name, version: current.version, changed: true };
      }
      // An admin's leave to load into a place no pipeline created is for that destination as it was
      // saved (its places, write mode and keys): a scoped change of anything else keeps it.
      const sameDestination = isDeepStrictEqual(
        normalise(current.definition.destination),
        normalise(def.destination),
      );
      await this.repo.update(environment, def, current.version + 1, places, m, {
        mayAdopt: mayAdopt || (current.may_adopt && sameDestination),
      });
      return { name: def.name, version: current.version + 1, changed: true };
    });
    if (saved.changed) await this.cache.changed(environment, def.name);
    return { name: saved.name, version: saved.version };
  }

  /**
   * Throws the 403 save would for a table or collection that a pipeline outside `access` loads into,
   * saving nothing: for a proposal to be refused before its user is asked (the save checks again).
   */
  async checkLoadingBeside(environment: string, dto: PipelineConfigDto, access: AccessCheck): Promise<void> {
    const def = toDefinition(dto, destinationDefaults(this.config, environment), this.sections);
    for (const [location, others] of await this.sharers(environment, def)) {
      this.policy.assertMayLoadBeside(access, location, others);
    }
  }

  /** Throws a 400 listing what is wrong with the sections of a `destination` body (as save would). */
  checkDestination(destination: DestinationDto): void {
    this.sections.validate(destination);
  }

  /**
   * The secrets a `destination` body names (any registered section's `secretName`): saving it hands
   * their credentials to the addresses the pipeline gives, so the caller needs `secret:use`.
   */
  namedSecrets(destination: Record<string, unknown> | undefined | null): string[] {
    return this.sections.namedSecrets(destination);
  }

  async get(environment: string, name: string): Promise<StoredPipeline> {
    const found = await this.find(environment, name);
    if (!found) throw new PipelineNotFoundError(name);
    return found;
  }

  /**
   * As `get`, from this process's cache when it holds the pipeline (PipelineCache: every change made
   * here is heard by every process before the change is answered). For the lookups of every upload
   * and job; reads that show a pipeline to its owner go to the database.
   */
  async getCached(environment: string, name: string): Promise<StoredPipeline> {
    const found = await this.cache.get(environment, name, () => this.find(environment, name));
    if (!found) throw new PipelineNotFoundError(name);
    return found;
  }

  /** Null only when absent: a database outage throws, it is never "no such pipeline". */
  async find(environment: string, name: string): Promise<StoredPipeline | null> {
    const row = await this.repo.find(environment, name);
    return row && stored(row);
  }

  /**
   * The pipeline a job is about to load for, checked again at load time: a pipeline being deleted
   * takes no loads, and one stored before a confinement rule existed cannot load outside it, nor,
   * stored before saves checked who else loads there, beside a pipeline of another scope. Every
   * load (uploads, drops, taps, documents, redeliveries) passes here.
   */
  async getForLoading(environment: string, name: string): Promise<StoredPipeline> {
    const found = await this.getCached(environment, name);
    if (found.deletingSince) throw new PipelineDeletingError(name);
    this.sections.assertAllowed(this.config, environment, found.definition.destination);
    // Only definitions stored before the check read the others: a checked save was refused unless
    // its saver held pipeline:update over every pipeline loading there, and any later save beside it
    // is checked against it.
    if (!found.locationsChecked) {
      for (const [location, others] of await this.sharers(environment, found.definition)) {
        this.policy.assertStoredMayLoadBeside(name, found.definition, location, others);
      }
    }
    return found;
  }

  /**
   * The other pipelines of the environment that load where `def` loads, by place (its description,
   * which names the place whole: store, database, schema, table or collection). The repository finds
   * them by their recorded places; those it returns unrecorded are read here and recorded.
   */
  private async sharers(
    environment: string,
    def: PipelineDefinition,
    m?: EntityManager,
  ): Promise<Map<string, PipelineDefinition[]>> {
    const found = new Map<string, PipelineDefinition[]>();
    const mine = new Set(this.placesOf(def));
    if (mine.size === 0) return found;
    for (const row of await this.repo.sharers(environment, def.name, [...mine], m)) {
      const theirs = this.placesOf(row.definition);
      if (row.stale) await this.repo.recordLocations(environment, row.name, row.version, theirs, m);
      for (const where of theirs) {
        if (mine.has(where)) found.set(where, [...(found.get(where) ?? []), row.definition]);
      }
    }
    return found;
  }

  /** Where a definition loads, each place once, as saves describe (and record) them. */
  private placesOf(def: PipelineDefinition): string[] {
    return [...new Set(this.sections.locationsOf(def.destination).map(describeLocation))].sort();
  }

  /** The listing, each item with its full definition so callers can filter by scope. */
  async listWithDefinitions(
    environment: string,
  ): Promise<{ item: PipelineListItem; definition: PipelineDefinition }[]> {
    return (await this.repo.list(environment)).map((r) => ({
      definition: r.definition,
      item: {
        name: r.name,
        catalog: r.catalog,
        sourceType: r.definition.source.fileAttributes.format,
        destinations: this.sections.loadersOf(r.definition),
        version: r.version,
        updatedAt: new Date(r.updated_at).toISOString(),
      },
    }));
  }

  /** First step of a delete with data: from here on the pipeline takes no loads and no changes. */
  async markDeleting(environment: string, name: string): Promise<void> {
    const marked = await this.busy(name, () =>
      this.repo.markDeleting(environment, name, ROW_LOCK_TIMEOUT_MS),
    );
    if (!marked) throw new PipelineNotFoundError(name);
    await this.cache.changed(environment, name);
  }

  /** Removes the configuration, and with it the records of what it created (not the objects). */
  async delete(environment: string, name: string): Promise<void> {
    const deleted = await this.busy(name, () => this.repo.delete(environment, name, ROW_LOCK_TIMEOUT_MS));
    if (!deleted) throw new PipelineNotFoundError(name);
    await this.cache.changed(environment, name);
  }

  /**
   * Appends columns found in a file but missing from the schema (as `string`, spec rule) and bumps
   * the version; concurrent jobs adding the same column add it once.
   */
  async addColumns(environment: string, name: string, columns: string[]): Promise<StoredPipeline> {
    const updated = await this.repo.transaction(async (m) => {
      const row = await this.repo.find(environment, name, m, true);
      if (!row) throw new PipelineNotFoundError(name);
      const fields = row.definition.source.schemaProperties.fields;
      const missing = columns.filter((c) => !fields.some((f) => f.name === c));
      if (missing.length === 0) return stored(row);
      const added: SchemaField[] = missing.map((c) => ({ name: c, type: 'string' }));
      const def: PipelineDefinition = {
        ...row.definition,
        source: { ...row.definition.source, schemaProperties: { fields: [...fields, ...added] } },
      };
      await this.repo.update(environment, def, row.version + 1, this.placesOf(def), m, null);
      return { ...stored(row), definition: def, version: row.version + 1, updatedAt: new Date() };
    });
    // Also when another job added them first: that job's change may not be heard here yet.
    await this.cache.changed(environment, name);
    return updated;
  }

  private async busy<T>(name: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) {
        throw new ConflictError(
          `pipeline '${name}' has a load creating its destination objects or writing its files; repeat the DELETE when it ends`,
        ).coded(PipelineErrorCode.LoadRunning);
      }
      throw err;
    }
  }
}

function stored(row: PipelineRow): StoredPipeline {
  return {
    definition: row.definition,
    version: row.version,
    updatedAt: row.updated_at,
    deletingSince: row.deleting_since,
    loadId: row.load_id,
    locationsChecked: row.locations_checked,
    mayAdopt: row.may_adopt,
  };
}

/** JSON round trip: drops undefined keys so stored and fresh definitions compare equal. */
function normalise(def: unknown): unknown {
  return JSON.parse(JSON.stringify(def));
}
