import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { parquetRows } from './parquet';

/**
 * A loopback stand-in for a Databricks workspace, speaking the two REST APIs the loader uses: the
 * Files API (`PUT /api/2.0/fs/files/Volumes/...`) and the SQL Statement Execution API
 * (`POST /api/2.0/sql/statements`, `GET …/{id}`), for the statements the loader sends: `SELECT 1`,
 * `CREATE TABLE IF NOT EXISTS`, and `COPY INTO … FROM '<dir>' FILEFORMAT = PARQUET` with
 * `mergeSchema` and the warehouse's load history (a file loaded once is skipped after). No registry
 * ships a Databricks server; what this does not cover is listed in docs/testing.md.
 */
export class DatabricksDouble {
  readonly token = `dapi-${Math.random().toString(36).slice(2)}`;
  readonly files = new Map<string, Buffer>();
  readonly tables = new Map<
    string,
    { columns: string[]; rows: Record<string, unknown>[]; loaded: Set<string> }
  >();
  readonly statements: string[] = [];
  private server: Server | null = null;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer(
      (req, res) =>
        void this.handle(req, res).catch((err: Error) => this.send(res, 500, { message: err.message })),
    );
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  rows(table: string): Record<string, unknown>[] {
    return this.tables.get(table.toLowerCase())?.rows ?? [];
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      this.send(res, 401, { error_code: 'UNAUTHENTICATED', message: 'invalid token' });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'PUT' && url.pathname.startsWith('/api/2.0/fs/files/Volumes/')) {
      this.files.set(decodeURI(url.pathname.slice('/api/2.0/fs/files'.length)), body);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/api/2.0/sql/statements') {
      const { statement, warehouse_id } = JSON.parse(body.toString('utf8')) as {
        statement: string;
        warehouse_id: string;
      };
      if (!warehouse_id) {
        this.send(res, 400, { error_code: 'INVALID_PARAMETER_VALUE', message: 'warehouse_id is required' });
        return;
      }
      this.statements.push(statement);
      try {
        await this.run(statement);
        this.send(res, 200, { statement_id: `st-${this.statements.length}`, status: { state: 'SUCCEEDED' } });
      } catch (err) {
        this.send(res, 200, {
          statement_id: `st-${this.statements.length}`,
          status: { state: 'FAILED', error: { error_code: 'BAD_REQUEST', message: (err as Error).message } },
        });
      }
      return;
    }
    this.send(res, 404, { error_code: 'ENDPOINT_NOT_FOUND', message: `no ${req.method} ${url.pathname}` });
  }

  private async run(statement: string): Promise<void> {
    if (/^SELECT 1$/i.test(statement)) return;
    const create = /^CREATE TABLE IF NOT EXISTS (.+?) \((.*)\)$/is.exec(statement);
    if (create) {
      const name = unquote(create[1]);
      if (!this.tables.has(name)) {
        const columns = create[2].split(',').map((c) => unquote(c.trim().split(' ')[0]));
        this.tables.set(name, { columns, rows: [], loaded: new Set() });
      }
      return;
    }
    const copy =
      /^COPY INTO (.+?) FROM '([^']+)' FILEFORMAT = PARQUET COPY_OPTIONS \('mergeSchema' = 'true'\)$/is.exec(
        statement,
      );
    if (copy) {
      const table = this.tables.get(unquote(copy[1]));
      if (!table) throw new Error(`table ${copy[1]} does not exist`);
      for (const [path, bytes] of this.files) {
        if (!path.startsWith(copy[2]) || table.loaded.has(path)) continue;
        for (const row of await parquetRows(bytes)) {
          for (const k of Object.keys(row)) if (!table.columns.includes(k)) table.columns.push(k);
          table.rows.push(row);
        }
        table.loaded.add(path);
      }
      return;
    }
    throw new Error(`the double does not know: ${statement.slice(0, 80)}`);
  }
}

/** `\`cat\`.\`schema\`.\`table\`` → `cat.schema.table`, lower-cased as Databricks treats names. */
function unquote(name: string): string {
  return name.replace(/`/g, '').toLowerCase();
}
