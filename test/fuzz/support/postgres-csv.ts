/**
 * PostgreSQL's own CSV import as the reference CSV parser: the destination's semantics are
 * PostgreSQL's, so `COPY … (FORMAT csv)` into a temporary table is the best oracle there is.
 */
import { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { TEST_DATABASE_URL } from '../../support/env';

export class PostgresCsv {
  private client: Client | null = null;
  private readonly made = new Set<number>();
  /** Reads share a table per width: one at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  /** The rows PostgreSQL reads from `data` with `width` text columns (null: NULL), or its error. */
  read(data: Uint8Array, width: number): Promise<{ rows: (string | null)[][] } | { error: string }> {
    const run = this.queue.then(() => this.readNow(data, width));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async readNow(
    data: Uint8Array,
    width: number,
  ): Promise<{ rows: (string | null)[][] } | { error: string }> {
    const c = await this.connect();
    const table = `fuzz_csv_${width}`;
    const cols = Array.from({ length: width }, (_, i) => `c${i + 1}`);
    if (!this.made.has(width)) {
      await c.query(`CREATE TEMP TABLE ${table} (seq serial, ${cols.map((n) => `${n} text`).join(', ')})`);
      this.made.add(width);
    }
    await c.query(`TRUNCATE ${table} RESTART IDENTITY`);
    try {
      await new Promise<void>((resolve, reject) => {
        const stream = c.query(copyFrom(`COPY ${table} (${cols.join(', ')}) FROM STDIN (FORMAT csv)`));
        stream.on('finish', resolve);
        stream.on('error', reject);
        stream.end(Buffer.from(data));
      });
    } catch (err) {
      return { error: (err as Error).message };
    }
    const res = await c.query({
      text: `SELECT ${cols.join(', ')} FROM ${table} ORDER BY seq`,
      rowMode: 'array',
    });
    return { rows: res.rows as (string | null)[][] };
  }

  async close(): Promise<void> {
    await this.client?.end();
    this.client = null;
  }

  private async connect(): Promise<Client> {
    if (this.client) return this.client;
    const c = new Client({ connectionString: TEST_DATABASE_URL });
    await c.connect();
    this.client = c;
    return c;
  }
}
