import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import type { AccessCheck } from '@tapyard/auth';
import {
  ConflictError,
  LOGGER,
  NotFoundError,
  ValidationError,
  errorMessage,
  DomainCode,
} from '@tapyard/core';
import { ObjectNotFoundError, ObjectStore } from '@tapyard/objectstore';
import { IncidentsService, TapScriptOrigin } from '@tapyard/incidents';
import { PipelinesService } from '@tapyard/pipelines';
import { MAX_SCRIPT_BYTES, TapConfigDto } from './dto/tap-config.dto';
import { MigrateStorageResult, TapConfig, TapWithScript } from './tap.types';
import { TapScriptRepository } from './tap-script-repository';
import { TapsRepository } from './taps.repository';
import { TapProcesses } from './tap-processes';
import { UNLIMITED, changesCode, nextGrant } from './tap-grants';
import { LedgerService } from './ledger.service';
import { TapPolicy } from './tap-policy';
import { TapErrorCode } from './tap-errors';
import { SCRIPT_PREFIX, isScriptOf, newScriptKey } from './tap-script-keys';
import { assertTapTimezone, fireTimesOf, nextFire } from './tap-schedule';
import { assertTapSecret, documentViolation } from './tap-rules';

export { SCRIPT_PREFIX, isScriptOf } from './tap-script-keys';
export { fireTimesOf, nextFire } from './tap-schedule';
export { assertTapSecret, documentViolation } from './tap-rules';

export class TapNotFoundError extends NotFoundError {
  override domainCode: DomainCode = TapErrorCode.NotFound;
  constructor(name: string) {
    super(`tap '${name}' does not exist`);
  }
}

/** How a script change came about and who made it (its incident's evidence runs with their rights). */
export interface ScriptChangeBy {
  origin: TapScriptOrigin;
  access: AccessCheck;
}

/** Tap configurations and their script versions in the environment's taps bucket. */
@Injectable()
export class TapsService {
  constructor(
    private readonly repo: TapsRepository,
    private readonly store: ObjectStore,
    private readonly pipelines: PipelinesService,
    private readonly processes: TapProcesses,
    private readonly scriptRepository: TapScriptRepository,
    private readonly policy: TapPolicy,
    private readonly ledger: LedgerService,
    private readonly incidents: IncidentsService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  list(environment: string): Promise<TapConfig[]> {
    return this.repo.list(environment);
  }

  async get(environment: string, name: string): Promise<TapConfig> {
    const tap = await this.repo.find(environment, name);
    if (!tap) throw new TapNotFoundError(name);
    return tap;
  }

  async getWithScript(environment: string, name: string): Promise<TapWithScript> {
    const tap = await this.get(environment, name);
    const nextFireTimes = fireTimesOf(tap, new Date());
    if (tap.scriptPath === null && tap.storage !== 'github') return { ...tap, script: null, nextFireTimes };
    const script = await this.liveScript(environment, tap);
    return script === null
      ? { ...tap, script: null, scriptMissing: true, nextFireTimes }
      : { ...tap, script, nextFireTimes };
  }

  /** The script a run executes: the repository file at the recorded commit, or the object at scriptPath. */
  async liveScript(environment: string, tap: TapConfig): Promise<string | null> {
    if (tap.storage === 'github') return this.scriptRepository.read(environment, tap);
    return tap.scriptPath === null ? null : this.readScript(environment, tap.scriptPath);
  }

  /**
   * Moves the live script between the object store and the code repository (`target`, or the other
   * one). Into the repository: a commit of the live text; out of it: a new object version. Built-in
   * objects are never deleted; already on the target, nothing happens.
   */
  async migrateStorage(
    environment: string,
    name: string,
    target: 'minio' | 'github' | undefined,
    access: AccessCheck,
  ): Promise<MigrateStorageResult> {
    const tap = await this.get(environment, name);
    const from = tap.storage ?? 'minio';
    const to = target ?? (from === 'minio' ? 'github' : 'minio');
    const result = (migrated: boolean): MigrateStorageResult => ({
      tapName: tap.name,
      storage: tap.storage ?? 'minio',
      scriptPath: tap.scriptPath,
      repoPath: tap.repoPath ?? null,
      commitSha: tap.commitSha ?? null,
      migrated,
    });
    if (from === to) return result(false);
    const before = tap.scriptPath;
    const text = await this.liveScript(environment, tap);
    if (text === null)
      throw new ConflictError(`tap '${name}' has no script to move`).coded(TapErrorCode.NoScript);
    if (to === 'github') {
      const at = await this.scriptRepository.commit(
        environment,
        tap.name,
        text,
        `Move tap ${tap.name} into the repository`,
      );
      Object.assign(tap, { storage: 'github', ...at });
    } else {
      tap.scriptPath = await this.storeScriptVersion(environment, tap.name, text);
      Object.assign(tap, { storage: 'minio', repoPath: null, commitSha: null });
    }
    await this.repo.updateConfig(environment, tap);
    // The same code in another place: both versions act with the tap's grant.
    const grant = (await this.repo.grant(environment, tap.name)) ?? UNLIMITED;
    this.scriptChanged(
      environment,
      tap.name,
      before,
      tap.scriptPath,
      { origin: 'migrate', access },
      { before: grant, after: grant },
    );
    return result(true);
  }

  /** The script body, or null when the object is absent. */
  async readScript(environment: string, scriptPath: string): Promise<string | null> {
    const bucket = await this.store.bucket(environment, 'taps');
    try {
      return await this.store.readText(bucket, scriptPath, MAX_SCRIPT_BYTES * 4);
    } catch (err) {
      if (err instanceof ObjectNotFoundError) return null;
      throw err;
    }
  }

  /**
   * Create or update, as `access` may (TapPolicy). Fields the body leaves out keep their stored
   * values. The caller (none when authentication is off) vouches for the tap's code: see nextGrant().
   */
  async save(environment: string, dto: TapConfigDto, access: AccessCheck): Promise<TapConfig> {
    const current = await this.repo.find(environment, dto.name);
    const tap = this.merge(current, dto);
    await this.policy.assertMaySave(access, environment, current, tap, dto.script !== undefined);
    if (current && current.tapType !== tap.tapType) {
      throw new ValidationError(
        `tapType cannot change once set: tap '${tap.name}' is ${current.tapType}, not ${tap.tapType}`,
        [{ field: 'tapType', problem: `is ${current.tapType} and cannot change` }],
      ).coded(TapErrorCode.Invalid);
    }
    if (tap.scriptPath !== null && dto.script === undefined && !isScriptOf(tap.name, tap.scriptPath)) {
      throw new ValidationError(
        `scriptPath must be one of this tap's scripts, shaped ${SCRIPT_PREFIX}${tap.name}_<suffix>.py`,
        [{ field: 'scriptPath', problem: 'is not a script of this tap' }],
      ).coded(TapErrorCode.InvalidScriptPath);
    }
    this.processes.checkPackages(tap.packages);
    if (dto.script !== undefined) await this.assertParses(dto.script);
    if (tap.secretName) assertTapSecret(tap.secretName);
    assertTapTimezone(tap.timezone);
    let next: Date | null = null;
    if (tap.cronExpression !== null) {
      next = nextFire(tap.cronExpression, tap.timezone, new Date());
      if (next === null) {
        throw new ValidationError(
          `cron expression '${tap.cronExpression}' never fires again (its years are past)`,
          [{ field: 'cronExpression', problem: 'has no future fire time' }],
        ).coded(TapErrorCode.InvalidCron);
      }
    }
    await this.assertCompatible(environment, tap);

    if (dto.script !== undefined)
      tap.scriptPath = await this.storeScriptVersion(environment, tap.name, dto.script);
    if (tap.storage === 'github' && (dto.script !== undefined || tap.scriptPath !== current?.scriptPath)) {
      // A repository tap gets each new script as a commit (the object version stays for rollback).
      const text = dto.script ?? (tap.scriptPath ? await this.readScript(environment, tap.scriptPath) : null);
      if (text !== null) {
        Object.assign(
          tap,
          await this.scriptRepository.commit(environment, tap.name, text, `Update tap ${tap.name}`),
        );
      }
    }
    const scheduleChanged =
      !current ||
      current.cronExpression !== tap.cronExpression ||
      current.timezone !== tap.timezone ||
      current.enabled !== tap.enabled;
    const previous = current ? ((await this.repo.grant(environment, tap.name)) ?? null) : null;
    const grant = nextGrant(
      current && { grant: previous },
      changesCode(current, tap, dto.script !== undefined),
      access.caller,
    );
    await this.repo.upsert(
      environment,
      tap,
      scheduleChanged ? (tap.enabled ? next : null) : undefined,
      grant,
    );
    if (current && (dto.script !== undefined || tap.scriptPath !== current.scriptPath))
      this.scriptChanged(
        environment,
        tap.name,
        current.scriptPath,
        tap.scriptPath,
        { origin: 'save', access },
        { before: previous ?? UNLIMITED, after: grant },
      );
    return tap;
  }

  /** 400 with the line when the script is not Python that parses: saving it would only fail each run. */
  private async assertParses(script: string): Promise<void> {
    const found = await this.processes.syntaxError(script);
    if (!found) return;
    const text = found.line === null ? '' : (script.split('\n')[found.line - 1] ?? '').trim();
    const message = `the script does not parse: ${found.reason}${text ? ` (${text.slice(0, 200)})` : ''}`;
    throw new ValidationError(message, [{ field: 'script', problem: found.reason }]).coded(
      TapErrorCode.ScriptSyntax,
    );
  }

  /**
   * Stores a script as a new version of the tap's scripts and returns its path; the configuration is
   * not changed (earlier versions stay for rollback; saving the tap with this scriptPath adopts it).
   * `change` (an AI authoring operation and its caller): the new version is compared with the tap's
   * live script in an incident.
   */
  async storeScriptVersion(
    environment: string,
    name: string,
    script: string,
    change?: ScriptChangeBy,
  ): Promise<string> {
    const key = newScriptKey(name);
    await this.store.put(
      await this.store.bucket(environment, 'taps'),
      key,
      Buffer.from(script, 'utf8'),
      'text/x-python; charset=utf-8',
    );
    if (change !== undefined) {
      const live = await this.repo.find(environment, name);
      // The live code acts with the tap's grant; the new version is a model's and acts with none.
      const grant = (await this.repo.grant(environment, name)) ?? UNLIMITED;
      if (live)
        this.scriptChanged(environment, name, live.scriptPath, key, change, { before: grant, after: [] });
    }
    return key;
  }

  /**
   * Opens an incident comparing the tap's live script with a new one, in the background: a failure
   * to open it is logged and never fails the change. A tap without a script before has nothing to
   * compare with. Each version's evidence runs with the grant its code acts with (`grants`: its
   * author's, none for a model's), narrowed to whoever made the change (or later verifies it).
   */
  private scriptChanged(
    environment: string,
    name: string,
    before: string | null,
    after: string | null,
    { origin, access }: ScriptChangeBy,
    grants: { before: string[]; after: string[] },
  ): void {
    if (before === null || after === null) return;
    const open = async (): Promise<void> => {
      const versions = await this.scriptVersions(environment, name);
      const number = (key: string): number => versions.indexOf(key) + 1;
      await this.incidents.tapScriptChanged({
        environment,
        tap: name,
        before: { scriptPath: before, version: number(before), grant: grants.before },
        after: { scriptPath: after, version: number(after), grant: grants.after },
        origin,
        access,
      });
    };
    open().catch((err: unknown) =>
      this.logger.warn({ tap: name, err: errorMessage(err) }, 'tap script incident not opened'),
    );
  }

  /** The tap's stored script keys, oldest first (their suffix starts with the time they were stored). */
  private async scriptVersions(environment: string, name: string): Promise<string[]> {
    const bucket = await this.store.bucket(environment, 'taps');
    return (await this.store.list(bucket, `${SCRIPT_PREFIX}${name}_`))
      .map((o) => o.key)
      .filter((key) => isScriptOf(name, key))
      .sort();
  }

  /** Spec rule 1, applied on save and again when the tap runs. */
  async assertCompatible(
    environment: string,
    tap: Pick<TapConfig, 'tapType' | 'targetPipeline'>,
  ): Promise<void> {
    if (tap.tapType !== 'document' || !tap.targetPipeline) return;
    const found = await this.pipelines.find(environment, tap.targetPipeline);
    const violation = documentViolation(tap.targetPipeline, found?.definition ?? null);
    if (violation) {
      throw new ValidationError(violation, [{ field: 'targetPipeline', problem: violation }]).coded(
        TapErrorCode.TargetRefused,
      );
    }
  }

  /**
   * Deletes the configuration, its run history and its document ledger in one transaction, then its
   * script versions and staged documents (objects left behind by a store failure cost storage only:
   * the tap is gone either way). Returns the config and how many ledger entries went with it.
   */
  async delete(environment: string, name: string): Promise<{ tap: TapConfig; ledgerEntriesDeleted: number }> {
    const tap = await this.get(environment, name);
    const ledger = await this.repo.delete(environment, name);
    await this.incidents.deleteTap(environment, name);
    await this.removeScripts(environment, name).catch((err: unknown) =>
      this.logger.warn({ tap: name, err: errorMessage(err) }, 'script versions of a deleted tap not removed'),
    );
    await this.ledger.removeStaged(ledger);
    return { tap, ledgerEntriesDeleted: ledger.length };
  }

  private async removeScripts(environment: string, name: string): Promise<void> {
    const bucket = await this.store.bucket(environment, 'taps');
    for (const key of await this.scriptVersions(environment, name)) await this.store.remove(bucket, key);
  }

  /** A configuration with defaults, for saving (over the stored one) or for a one-off test. */
  merge(current: TapConfig | null, dto: Partial<TapConfigDto>): TapConfig {
    const pick = <K extends keyof TapConfig>(k: K, fallback: TapConfig[K]): TapConfig[K] => {
      const v = (dto as Partial<Record<keyof TapConfig, unknown>>)[k];
      return v === undefined ? (current?.[k] ?? fallback) : (v as TapConfig[K]);
    };
    const text = (v: string | null): string | null => (v && v.trim() ? v.trim() : null);
    return {
      name: dto.name ?? current?.name ?? 'unsaved',
      description: pick('description', ''),
      scriptPath: text(pick('scriptPath', null)),
      targetPipeline: (pick('targetPipeline', '') ?? '').trim(),
      packages: pick('packages', []).map((p) => p.trim()),
      secretName: text(pick('secretName', null)),
      cronExpression: text(pick('cronExpression', null)),
      timezone: pick('timezone', 'UTC').trim(),
      enabled: pick('enabled', false),
      tapType: pick('tapType', 'structured'),
      catalog: text(pick('catalog', null)),
      // Where the script lives changes only through migrate-storage.
      storage: current?.storage ?? 'minio',
      repoPath: current?.repoPath ?? null,
      commitSha: current?.commitSha ?? null,
    };
  }
}
