import { storeUnavailable } from './vector-store.errors';
import { EgressRefused, RedirectRefused } from '@tapyard/egress';
import { isUnreachable, unreachableReason } from './vetted-url';

/** The address without credentials, for messages. */
export function safeUrl(raw: string | undefined): string {
  try {
    const u = new URL(raw ?? '');
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(invalid url)';
  }
}

/**
 * A store's client, opened on first use (after the egress check its `open` makes), and the one way
 * calls go through it: a refused address or a store that cannot be reached becomes a
 * ServiceUnavailableError naming the store and its address (never a credential).
 */
export class StoreConnection<C> {
  private client: Promise<C> | null = null;

  constructor(
    private readonly store: string,
    private readonly url: string | undefined,
    private readonly open: () => Promise<C>,
    /** Whether an error means the store could not be reached (each client words it its own way). */
    private readonly down: (err: unknown) => boolean = isUnreachable,
    private readonly shut: (client: C) => Promise<void> = async () => undefined,
  ) {}

  async call<T>(work: (client: C) => Promise<T>): Promise<T> {
    let client: C;
    try {
      this.client ??= this.open();
      client = await this.client;
    } catch (err) {
      this.client = null;
      // A refused address is a configuration the operator has not allowed: unavailable, saying why.
      if (err instanceof EgressRefused) throw storeUnavailable(this.store, err.message);
      throw storeUnavailable(this.store, `${this.store} is not usable: ${(err as Error).message}`);
    }
    try {
      return await work(client);
    } catch (err) {
      // Each call may check its address again (a name that now resolves elsewhere).
      if (err instanceof EgressRefused) throw storeUnavailable(this.store, err.message);
      if (err instanceof RedirectRefused) {
        throw storeUnavailable(
          this.store,
          `${this.store} at ${safeUrl(this.url)} answered with a redirect (HTTP ${err.status}), which is not followed`,
        );
      }
      if (this.down(err)) {
        // The reason when the error names one (a code such as ECONNREFUSED; never a header).
        const reason = unreachableReason(err);
        throw storeUnavailable(
          this.store,
          `${this.store} is unreachable at ${safeUrl(this.url)}${reason ? `: ${reason}` : ''}`,
        );
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    const c = await client?.catch(() => null);
    if (c) await this.shut(c).catch(() => undefined);
  }
}
