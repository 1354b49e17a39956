import { Type } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Relay, cuttableProxy } from './net';
import { parquetRows } from './parquet';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mongo } from 'mongoose';
import { Client } from 'pg';
import {
  Destination,
  MongoDbDestination,
  ObjectStoreDestination,
  PostgresDestination,
  RestDestination,
  ActiveMqDestination,
  KafkaDestination,
  DatabricksDestination,
  SnowflakeDestination,
} from '@tapyard/destinations';
import snowflake from 'snowflake-sdk';
import { DatabricksDouble } from './databricks-double';
import { RestSink } from './rest-sink';
import { StompCollector } from './stomp-collector';
import { peerFields } from './vector-peers';
import { TEST_DATABASE_URL, TEST_MONGODB_URI, TEST_OBJECT_STORE } from './env';
import { TestMinio } from './minio';
import { readTopic } from './kafka-topic';

/** A loaded row as the contract compares it: the pipeline's columns only, absent values as null. */
export type Row = Record<string, string | number | boolean | null>;

/** A rejected row as the destination kept it. */
export interface KeptReject {
  line: number;
  reason: string;
}

/** A destination's contract fixture while its services are open (one per destination suite). */
export interface OpenFixture {
  /** Environment of the API: the destination reached directly (deletes, reads behind its back). */
  readonly apiEnv: Record<string, string>;
  /** Environment of the worker: the destination reached through `relay`, so a test can cut it. */
  readonly workerEnv: Record<string, string>;
  readonly relay: Relay;
  /** The pipeline's `destination` object loading into the place called `name`. */
  destination(name: string): Record<string, unknown>;
  /** Every row loaded into `name`, in no particular order, reduced to `columns`. */
  rows(name: string, columns: string[]): Promise<Row[]>;
  /** Every rejected row kept for `name`, where this destination keeps them. */
  rejects(name: string): Promise<KeptReject[]>;
  /** What exists of `name` now (tables, collections, object keys): empty once its data is deleted. */
  present(name: string): Promise<string[]>;
  /** What `DELETE /pipeline?deleteData=true` must list as dropped for `name`, loaded by `tokens`. */
  dropped(name: string, tokens: string[]): string[];
  /** Removes whatever the suite left behind, and closes clients and the relay. */
  close(): Promise<void>;
  /** Secrets the destination's sections name, created through the API before any pipeline. */
  readonly secrets?: Record<string, Record<string, string>>;
}

export interface DestinationFixture {
  /** How this destination is named in the descriptions of its outages. */
  readonly service: RegExp;
  /**
   * Bytes the worker sends the destination, once a mid-sized load started, after which the relay
   * cuts: well inside the rows of the "down mid-job" file, past the handshakes and ledger checks.
   */
  readonly tripBytes: number;
  open(environment: string): Promise<OpenFixture>;
}

const suffix = () => randomBytes(4).toString('hex');
const portOf = (url: string, fallback: number) => Number(new URL(url).port || fallback);

function pick(doc: Record<string, unknown>, columns: string[]): Row {
  const row: Row = {};
  for (const c of columns) {
    const v = doc[c];
    row[c] =
      v === undefined || v === null
        ? null
        : typeof v === 'bigint'
          ? Number(v)
          : (v as string | number | boolean);
  }
  return row;
}

/** PostgreSQL: a table (and `<table>_rejects`) in a schema of the suite's own, dropped at the end. */
const postgres: DestinationFixture = {
  service: /postgres/i,
  tripBytes: 120_000,
  async open() {
    const schema = `ct_${suffix()}`;
    const database = new URL(TEST_DATABASE_URL).pathname.slice(1);
    const pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    const r = await cuttableProxy(portOf(TEST_DATABASE_URL, 5432));
    const through = new URL(TEST_DATABASE_URL);
    through.port = String(r.port);
    const table = (name: string) => `"${schema}"."${name}"`;
    return {
      apiEnv: {},
      // The metadata database stays direct: only the destination goes away.
      workerEnv: { POSTGRES_DESTINATION_URL: through.toString() },
      relay: r,
      destination: (name) => ({ database: { dbName: database, schema, table: name, usePostgres: true } }),
      async rows(name, columns) {
        const res = await pg.query(`SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM ${table(name)}`);
        return (res.rows as Record<string, unknown>[]).map((d) => pick(d, columns));
      },
      async rejects(name) {
        const res = await pg.query(`SELECT line, reason FROM ${table(`${name}_rejects`)}`);
        return (res.rows as { line: string; reason: string }[]).map((x) => ({
          line: Number(x.line),
          reason: x.reason,
        }));
      },
      async present(name) {
        const res = await pg.query(
          `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename IN ($2, $3) ORDER BY 1`,
          [schema, name, `${name}_rejects`],
        );
        return (res.rows as { tablename: string }[]).map((x) => x.tablename);
      },
      dropped: (name) => [
        `PostgreSQL table ${database}.${schema}.${name}`,
        `PostgreSQL table ${database}.${schema}.${name}_rejects`,
      ],
      async close() {
        await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await pg.query(`DELETE FROM tapyard_meta.loads WHERE target LIKE $1`, [`${database}.${schema}.%`]);
        await pg.end();
        await r.close();
      },
    };
  },
};

/** MongoDB (FerretDB here): a collection (and `<collection>_rejects`) in a database of its own. */
const mongodb: DestinationFixture = {
  service: /mongodb/i,
  // Past the first insert batch (1000 documents of some 90 bytes): rows are in, the job is not.
  tripBytes: 150_000,
  async open() {
    const dbName = `ct_${suffix()}`;
    const client = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
    const r = await cuttableProxy(portOf(TEST_MONGODB_URI, 27017));
    const db = client.db(dbName);
    return {
      apiEnv: { MONGODB_URI: TEST_MONGODB_URI },
      workerEnv: { MONGODB_URI: `mongodb://127.0.0.1:${r.port}` },
      relay: r,
      destination: (name) => ({ database: { dbName, table: name, usePostgres: false } }),
      async rows(name, columns) {
        return (await db.collection(name).find({}).toArray()).map((d) => pick(d, columns));
      },
      async rejects(name) {
        const docs = await db.collection(`${name}_rejects`).find({}).toArray();
        return docs.map((d) => ({ line: Number(d.line), reason: String(d.reason) }));
      },
      async present(name) {
        const found = await db
          .listCollections({ name: { $in: [name, `${name}_rejects`] } }, { nameOnly: true })
          .toArray();
        return found.map((c) => c.name).sort();
      },
      dropped: (name) => [
        `MongoDB collection ${dbName}.${name}`,
        `MongoDB collection ${dbName}.${name}_rejects`,
      ],
      async close() {
        await db.dropDatabase();
        await client.close();
        await r.close();
      },
    };
  },
};

/** Object store (MinIO): Parquet files under `ct/<name>/job=<token>/` in the environment's output bucket. */
const objectStore: DestinationFixture = {
  service: /object ?store/i,
  // Inside the upload of the part file (some 30 bytes a row), after the small _SUCCESS lookups.
  tripBytes: 60_000,
  async open(environment) {
    const minio = new TestMinio();
    const bucket = `${environment}-output`;
    const r = await cuttableProxy(portOf(TEST_OBJECT_STORE.OBJECT_STORE_ENDPOINT, 9000));
    const scratch = await mkdtemp(join(tmpdir(), 'tapyard-contract-'));
    const prefix = (name: string) => `ct/${name}/`;
    const keys = (name: string) => minio.keys(bucket, prefix(name));
    const objectRows = async (key: string): Promise<Record<string, unknown>[]> => {
      const local = join(scratch, `${suffix()}.parquet`);
      await writeFile(local, await minio.read(bucket, key));
      const out = await parquetRows(local);
      await rm(local);
      return out;
    };
    return {
      apiEnv: { ...TEST_OBJECT_STORE },
      workerEnv: {
        ...TEST_OBJECT_STORE,
        OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${r.port}`,
        // Only the destination is cut: the job's own input still arrives.
        STAGING_OBJECT_STORE_ENDPOINT: TEST_OBJECT_STORE.OBJECT_STORE_ENDPOINT,
      },
      relay: r,
      destination: (name) => ({ objectStore: { prefix: `ct/${name}` } }),
      async rows(name, columns) {
        const out: Row[] = [];
        for (const key of (await keys(name)).filter((k) => k.endsWith('.parquet'))) {
          for (const d of await objectRows(key)) out.push(pick(d, columns));
        }
        return out;
      },
      async rejects(name) {
        const out: KeptReject[] = [];
        for (const key of (await keys(name)).filter((k) => k.endsWith('/_rejects.jsonl'))) {
          const text = (await minio.read(bucket, key)).toString('utf8');
          for (const line of text.split('\n').filter(Boolean)) {
            const r = JSON.parse(line) as KeptReject;
            out.push({ line: r.line, reason: r.reason });
          }
        }
        return out;
      },
      present: keys,
      dropped: (name, tokens) => tokens.map((t) => `files under s3://${bucket}/${prefix(name)}job=${t}/`),
      async close() {
        for (const purpose of ['raw', 'config', 'taps', 'staged', 'output', 'assistant']) {
          const b = `${environment}-${purpose}`;
          if (!(await minio.client.bucketExists(b))) continue;
          for (const key of await minio.keys(b, '')) await minio.client.removeObject(b, key);
          await minio.client.removeBucket(b);
        }
        await rm(scratch, { recursive: true, force: true });
        await r.close();
      },
    };
  },
};

/** Rows a sink refused (or the platform rejected), as the sink ledger keeps them. */
async function sinkRejects(
  environment: string,
  destination: string,
  pipeline: string,
): Promise<KeptReject[]> {
  const pg = new Client({ connectionString: TEST_DATABASE_URL });
  await pg.connect();
  try {
    const { rows } = await pg.query<KeptReject>(
      'SELECT line, reason FROM tapyard.sink_rejects WHERE environment = $1 AND destination = $2 AND pipeline = $3',
      [environment, destination, pipeline],
    );
    return rows;
  } finally {
    await pg.end();
  }
}

const rest: DestinationFixture = {
  service: /REST endpoint/i,
  // Some 50 bytes a row as JSON, 100 rows a request: well into the 10,000 rows.
  tripBytes: 120_000,
  async open(environment) {
    const sink = await new RestSink().start();
    const r = await cuttableProxy(sink.port);
    const allow = { REST_SINK_ALLOW: `127.0.0.1:${r.port},127.0.0.1:${sink.port}` };
    const path = (name: string) => `/sink/${environment}/${name}`;
    return {
      apiEnv: allow,
      workerEnv: allow,
      relay: r,
      destination: (name) => ({ rest: { url: `http://127.0.0.1:${r.port}${path(name)}`, batchSize: 100 } }),
      rows: async (name, columns) => sink.rows(path(name)).map((d) => pick(d, columns)),
      rejects: (name) => sinkRejects(environment, 'rest', name),
      present: async (name) => {
        const n = sink.rows(path(name)).length;
        return n > 0 ? [`${n} rows at the endpoint`] : [];
      },
      dropped: () => [],
      async close() {
        await r.close();
        await sink.stop();
      },
    };
  },
};

const activemq: DestinationFixture = {
  service: /ActiveMQ/i,
  // A message frame with its headers is some 300 bytes: well into the 10,000 rows.
  tripBytes: 300_000,
  async open(environment) {
    const fields = peerFields('activemq');
    const port = Number(new URL(fields.url).port);
    const r = await cuttableProxy(port);
    const queue = (name: string) => `/queue/ct.${environment}.${name}`;
    // A consumer as the guarantee asks of one: deduplicating on tapyard-message-id.
    const consumer = await StompCollector.open(fields, `/queue/ct.${environment}.>`);
    const allow = { TAP_EGRESS_ALLOW: `127.0.0.1:${r.port},127.0.0.1:${port}` };
    return {
      apiEnv: allow,
      workerEnv: allow,
      secrets: { amq: { ...fields, url: `stomp://127.0.0.1:${r.port}` } },
      relay: r,
      destination: (name) => ({ activemq: { secretName: 'amq', destination: queue(name) } }),
      rows: async (name, columns) => (await consumer.settled(queue(name))).map((d) => pick(d, columns)),
      rejects: (name) => sinkRejects(environment, 'activemq', name),
      present: async (name) => {
        const n = (await consumer.settled(queue(name))).length;
        return n > 0 ? [`${n} messages on ${queue(name)}`] : [];
      },
      dropped: () => [],
      async close() {
        await consumer.close();
        await r.close();
      },
    };
  },
};

const kafka: DestinationFixture = {
  service: /Kafka/i,
  // Inside the produce requests of the 10,000 rows (GZIP-compressed, some 10 bytes a row on the wire).
  tripBytes: 40_000,
  async open(environment) {
    const brokers = peerFields('kafka').brokers;
    // The broker's RELAYED listener (9094) advertises 19094: every connection passes this relay.
    const r = await cuttableProxy(
      Number(process.env.TAPYARD_KAFKA_RELAYED_PORT ?? 9094),
      Number(process.env.TAPYARD_KAFKA_RELAY_PORT ?? 19094),
    );
    const allow = { TAP_EGRESS_ALLOW: `127.0.0.1:${r.port}` };
    const topic = (name: string) => `ct.${environment}.${name}`;
    return {
      apiEnv: allow,
      workerEnv: allow,
      secrets: { kafka: { brokers: `127.0.0.1:${r.port}` } },
      relay: r,
      destination: (name) => ({ kafka: { secretName: 'kafka', topic: topic(name) } }),
      rows: async (name, columns) =>
        (await readTopic(brokers, topic(name))).map((m) => pick(m.value, columns)),
      rejects: (name) => sinkRejects(environment, 'kafka', name),
      present: async (name) => {
        const n = (await readTopic(brokers, topic(name))).length;
        return n > 0 ? [`${n} messages on ${topic(name)}`] : [];
      },
      dropped: () => [],
      async close() {
        await r.close();
      },
    };
  },
};

const databricks: DestinationFixture = {
  service: /Databricks/i,
  // Inside the Parquet upload (the Files API PUT), past the statements before it.
  tripBytes: 30_000,
  async open(environment) {
    const double = await new DatabricksDouble().start();
    const r = await cuttableProxy(double.port);
    const allow = { TAP_EGRESS_ALLOW: `127.0.0.1:${r.port}` };
    const table = (name: string) => `main.ct.${environment.replace(/[^a-z0-9]/g, '_')}_${name}`;
    return {
      apiEnv: allow,
      workerEnv: allow,
      secrets: {
        dbx: {
          host: `http://127.0.0.1:${r.port}`,
          token: double.token,
          warehouseId: 'wh1',
          catalog: 'main',
          schema: 'ct',
        },
      },
      relay: r,
      destination: (name) => ({ databricks: { secretName: 'dbx', table: table(name).split('.')[2] } }),
      rows: async (name, columns) => double.rows(table(name)).map((d) => pick(d, columns)),
      rejects: (name) => sinkRejects(environment, 'databricks', name),
      present: async (name) => {
        const n = double.rows(table(name)).length;
        return n > 0 ? [`${n} rows in ${table(name)}`] : [];
      },
      dropped: () => [],
      async close() {
        await r.close();
        await double.stop();
      },
    };
  },
};

/** Rows of a table in the local Snowflake stand-in, through the official driver. */
async function snowflakeRows(
  fields: Record<string, string>,
  table: string,
): Promise<Record<string, unknown>[]> {
  const connection = snowflake.createConnection({
    account: fields.account,
    username: fields.user,
    password: fields.password,
    database: fields.database,
    schema: fields.schema,
    warehouse: fields.warehouse,
    accessUrl: fields.accessUrl,
  } as snowflake.ConnectionOptions);
  await new Promise<void>((resolve, reject) => connection.connect((err) => (err ? reject(err) : resolve())));
  try {
    return await new Promise<Record<string, unknown>[]>((resolve, reject) =>
      connection.execute({
        sqlText: `SELECT * FROM ${table}`,
        complete: (err, _stmt, rows) => {
          if (err) return /does not exist|not found/i.test(err.message) ? resolve([]) : reject(err);
          // Snowflake answers unquoted names in upper case; the contract compares the pipeline's.
          resolve(
            (rows ?? []).map((r) =>
              Object.fromEntries(Object.entries(r as object).map(([k, v]) => [k.toLowerCase(), v])),
            ),
          );
        },
      }),
    );
  } finally {
    await new Promise<void>((resolve) => connection.destroy(() => resolve()));
  }
}

const snowflakeFixture: DestinationFixture = {
  service: /Snowflake/i,
  // Inside the PUT of the job's Parquet file, past the login and the statements before it.
  tripBytes: 12_000,
  async open(environment) {
    const fields = peerFields('snowflake');
    const r = await cuttableProxy(Number(new URL(fields.accessUrl).port));
    const allow = { TAP_EGRESS_ALLOW: `127.0.0.1:${r.port}` };
    const table = (name: string) => `CT_${environment.replace(/[^A-Za-z0-9]/g, '_')}_${name}`.toUpperCase();
    return {
      apiEnv: allow,
      workerEnv: allow,
      secrets: { sf: { ...fields, accessUrl: `http://127.0.0.1:${r.port}` } },
      relay: r,
      destination: (name) => ({ snowflake: { secretName: 'sf', table: table(name) } }),
      rows: async (name, columns) => (await snowflakeRows(fields, table(name))).map((d) => pick(d, columns)),
      rejects: (name) => sinkRejects(environment, 'snowflake', name),
      present: async (name) => {
        const n = (await snowflakeRows(fields, table(name))).length;
        return n > 0 ? [`${n} rows in ${table(name)}`] : [];
      },
      dropped: () => [],
      async close() {
        await r.close();
      },
    };
  },
};

/**
 * Every loader registered in DESTINATION_PLUGINS needs its fixture here: the contract suite fails for
 * a loader without one, so a new destination gets the suite by registering and adding its fixture.
 */
export const CONTRACT_FIXTURES: ReadonlyMap<Type<Destination>, DestinationFixture> = new Map<
  Type<Destination>,
  DestinationFixture
>([
  [PostgresDestination, postgres],
  [MongoDbDestination, mongodb],
  [ObjectStoreDestination, objectStore],
  [RestDestination, rest],
  [ActiveMqDestination, activemq],
  [KafkaDestination, kafka],
  [DatabricksDestination, databricks],
  [SnowflakeDestination, snowflakeFixture],
]);

export function fixtureFor(loader: Type<Destination>): DestinationFixture {
  const fixture = CONTRACT_FIXTURES.get(loader);
  if (!fixture) {
    throw new Error(
      `destination ${loader.name} is registered in DESTINATION_PLUGINS but has no contract fixture: ` +
        'add a fixture for it to CONTRACT_FIXTURES in test/support/destination-contract.ts',
    );
  }
  return fixture;
}
