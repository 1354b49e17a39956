import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { LOGGER, NotFoundError, errorMessage } from '@tapyard/core';
import { ObjectStore } from '@tapyard/objectstore';
import { LedgerEntry } from './tap.types';
import { TapsRepository } from './taps.repository';
import { TapErrorCode } from './tap-errors';

/**
 * The document ledger of document taps: `<tap>|<uri>` → content hash and staged object. Removing an
 * entry removes its staged object too, so the next run processes that document again.
 */
@Injectable()
export class LedgerService {
  constructor(
    private readonly repo: TapsRepository,
    private readonly store: ObjectStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  list(environment: string, tap: string): Promise<LedgerEntry[]> {
    return this.repo.ledger(environment, tap);
  }

  async removeEntry(environment: string, tap: string, uri: string): Promise<LedgerEntry> {
    const [entry] = await this.repo.removeLedger(environment, tap, uri);
    if (!entry)
      throw new NotFoundError(`tap '${tap}' has no ledger entry for '${uri}'`).coded(
        TapErrorCode.LedgerEntryNotFound,
      );
    await this.removeStaged([entry]);
    return entry;
  }

  async clear(environment: string, tap: string): Promise<number> {
    const removed = await this.repo.removeLedger(environment, tap);
    await this.removeStaged(removed);
    return removed.length;
  }

  /** `DELETE /pipeline?deleteData=true`: every tap feeding the pipeline starts over. */
  async clearForPipeline(environment: string, pipeline: string): Promise<number> {
    let n = 0;
    for (const tap of await this.repo.targeting(environment, pipeline))
      n += await this.clear(environment, tap.name);
    return n;
  }

  /** Best effort: a staged object left behind costs storage, never correctness. */
  async removeStaged(entries: LedgerEntry[]): Promise<void> {
    for (const e of entries) {
      const slash = e.stagedPath.indexOf('/');
      await this.store
        .remove(e.stagedPath.slice(0, slash), e.stagedPath.slice(slash + 1))
        .catch((err: unknown) =>
          this.logger.warn(
            { stagedPath: e.stagedPath, err: errorMessage(err) },
            'staged document not removed',
          ),
        );
    }
  }
}
