/**
 * `npm run bench:sinks` — rows/s into each sink through Tapyard (upload → the job's end) against that
 * sink's own client producing the same rows as JSON, bare, on the same box in the same run (Tapyard's
 * end is the job's last event, as the platform recorded it, not when a status poll saw it):
 * - Kafka: @platformatic/kafka (the loader's client), idempotent transactional producer, GZIP (or
 *   BENCH_KAFKA_COMPRESSION's codec, both sides), 1,000
 *   messages a request, each with the headers the loader sends (pipeline, tokens, row, message id): the same messages; a second line
 *   times the values alone, without headers, for reference;
 * - ActiveMQ: @stomp/stompjs, persistent messages, receipts awaited with 500 in flight (as the loader);
 * - REST: fetch POSTing JSON arrays of 500 rows to the same loopback receiver, one request at a time
 *   (Tapyard keeps the section's `concurrency`, 4 unless BENCH_REST_CONCURRENCY says); a second line
 *   times a bare client that reads the CSV file itself (typing each value into the same JSON), for reference;
 * BENCH_SINK_ROWS rows (default 200,000) of the narrow file, BENCH_AMQ_ROWS (20,000) for ActiveMQ, whose queues
 * are drained afterwards; BENCH_SINK_ROUNDS (3) rounds of each side in turn, the ratio of their medians
 * (a first run of either side runs its code cold). Starts its own API and worker (built
 * apps) and the brokers through scripts/services. Prints ratios, and each Tapyard round's CPU by process and
 * thread (the worker's stage threads negative when a thread let go took its CPU with it); asserts nothing.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createGunzip } from 'node:zlib';
import { AddressInfo } from 'node:net';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as Stomp } from '@stomp/stompjs';
import { TCPWrapper } from '@stomp/tcp-wrapper';
import { Producer, stringSerializer } from '@platformatic/kafka';
import {
  NARROW_COLUMNS,
  BenchPlatform,
  ROOT,
  benchTarget,
  cpuSeconds,
  threadCpuSeconds,
  postJson,
  startPlatform,
  uploadFile,
  secondsToDone,
  writeCsv,
} from './support';
import { checkComparable, median } from './support';

const ROWS = Number(process.env.BENCH_SINK_ROWS ?? 200_000);
// Persistent messages with receipts run at some 1,700/s on the development box: fewer rows, same ratio.
const AMQ_ROWS = Number(process.env.BENCH_AMQ_ROWS ?? 20_000);
const { PORT, BASE, ENV } = benchTarget('benchsink');
// BENCH_SINKS: the sinks to measure (`kafka,activemq,rest`, the default), to iterate on one.
const ONLY = new Set((process.env.BENCH_SINKS ?? 'kafka,activemq,rest').split(','));
// Rounds per sink, Tapyard and the bare client in turn; the ratio is of their medians.
const ROUNDS = Number(process.env.BENCH_SINK_ROUNDS ?? 3);
// Rows per REST request, on both sides.
const REST_BATCH = Number(process.env.BENCH_REST_BATCH ?? 500);
// The Kafka record batches' codec, on both sides (the section's `compression`).
const KAFKA_COMPRESSION = (process.env.BENCH_KAFKA_COMPRESSION ?? 'gzip') as
  'gzip' | 'zstd' | 'lz4' | 'snappy' | 'none';
// Tapyard's REST requests in flight (the section's `concurrency`); the bare client sends one at a time.
// BENCH_REST_COMPRESSION=gzip: Tapyard's bodies gzip-compressed (the section's `compression`; the bare
// client's are not, and the receiver only counts, so this measures the compression's cost alone).
const REST_CONCURRENCY = process.env.BENCH_REST_CONCURRENCY
  ? Number(process.env.BENCH_REST_CONCURRENCY)
  : undefined;

function peer(name: string): Record<string, string> {
  const out = execFileSync('bash', [join(ROOT, 'scripts', 'services'), 'up', name], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Record<string, string>;
}

/** The rows as the sinks send them (what the bare producers send too). */
function jsonRows(rows: number): string[] {
  const out: string[] = [];
  for (let i = 1; i <= rows; i++) {
    out.push(
      JSON.stringify({
        id: i,
        amount: Number((i * 0.37).toFixed(2)),
        label: `label-${i % 1000}`,
        flag: i % 3 === 0,
        day: `2026-03-${String(1 + (i % 28)).padStart(2, '0')}`,
      }),
    );
  }
  return out;
}

/**
 * When the job's stages began and ended, in ms from the upload's start (epochs are the same host's
 * clock): what overlapped the upload, and where the time went.
 */
async function timeline(token: string, began: number, answered: number): Promise<string> {
  const events = (await (await fetch(`${BASE}/pipeline/status?pipelinetoken=${token}`)).json()) as {
    processName: string;
    state: string;
    epoch: number;
  }[];
  const steps = events
    .filter((e) => e.state !== 'processing')
    .map((e) => `${e.processName} ${e.state} ${e.epoch - began}`);
  return `ms from the upload's start: upload answered ${answered}; ${steps.join(', ')}`;
}

/** CPU seconds of the bench's API, and of the worker's main thread and its stage threads, so far. */
async function appsCpu(platform: BenchPlatform): Promise<{ api: number; main: number; stages: number }> {
  const [api, worker] = await Promise.all([
    cpuSeconds(platform.api.pid ?? 0),
    threadCpuSeconds(platform.worker.pid ?? 0),
  ]);
  return { api, main: worker.get('MainThread') ?? 0, stages: worker.get('WorkerThread') ?? 0 };
}

/** CPU seconds of this process since `since` (process.cpuUsage()). */
function benchCpu(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
}

/** A side's load takes seconds: past this its peer stopped answering, and the bench says so rather than wait. */
const SIDE_LIMIT_MS = 120_000;

async function timed(work: () => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      work(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new Error(`a load did not end within ${SIDE_LIMIT_MS / 1000} s: is its peer answering?`)),
          SIDE_LIMIT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** The headers the Kafka loader puts on each message (built before the clock starts, like the rows). */
function kafkaHeaders(rows: number): Record<string, string>[] {
  const token = randomUUID();
  return Array.from({ length: rows }, (_, i) => ({
    'tapyard-pipeline': 'bench_kafka',
    'tapyard-pipeline-token': token,
    'tapyard-row': String(i + 2),
    'tapyard-message-id': `${token}:${i + 2}`,
  }));
}

async function bareKafka(
  brokers: string,
  rows: string[],
  headers: Record<string, string>[] | null,
): Promise<void> {
  const producer = new Producer({
    clientId: 'bench',
    bootstrapBrokers: [brokers],
    idempotent: true,
    transactionalId: `bench-${randomUUID()}`,
    // The run's topic is new: made by the first produce request, as KafkaJS did by default.
    autocreateTopics: true,
    timeout: 60_000,
    compression: KAFKA_COMPRESSION,
    serializers: { value: stringSerializer, headerKey: stringSerializer, headerValue: stringSerializer },
  });
  const tx = await producer.beginTransaction({ producerId: -1n, producerEpoch: -1 });
  const topic = `bench.bare.${ENV}`;
  for (let i = 0; i < rows.length; i += 1000) {
    await tx.send({
      messages: rows
        .slice(i, i + 1000)
        .map((value, j) => (headers ? { topic, value, headers: headers[i + j] } : { topic, value })),
    });
  }
  await tx.commit();
  await producer.close();
}

/**
 * The STOMP session, or an error within 30 s: a broker that refuses or drops the connection would
 * otherwise leave the bench waiting silently (reconnectDelay 0 never retries).
 */
async function connected(client: Stomp): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      client.onConnect = () => resolve();
      client.onStompError = (frame) => reject(new Error(`ActiveMQ refused the session: ${frame.body}`));
      client.onWebSocketClose = () => reject(new Error('ActiveMQ closed the STOMP connection'));
      timer = setTimeout(
        () => reject(new Error('ActiveMQ did not open a STOMP session within 30 s')),
        30_000,
      );
      client.activate();
    });
  } finally {
    clearTimeout(timer);
  }
}

/** Takes every message off a queue (benchmarks leave nothing behind on the shared broker). */
async function drain(fields: Record<string, string>, queue: string): Promise<void> {
  const u = new URL(fields.url);
  const client = new Stomp({
    webSocketFactory: () => new TCPWrapper(u.hostname, Number(u.port)),
    connectHeaders: { login: fields.username, passcode: fields.password },
    reconnectDelay: 0,
    debug: () => undefined,
  });
  await connected(client);
  let last = Date.now();
  client.subscribe(queue, () => (last = Date.now()));
  while (Date.now() - last < 2000) await new Promise((r) => setTimeout(r, 200));
  await client.deactivate();
}

async function bareStomp(fields: Record<string, string>, rows: string[]): Promise<void> {
  const u = new URL(fields.url);
  const client = new Stomp({
    webSocketFactory: () => new TCPWrapper(u.hostname, Number(u.port)),
    connectHeaders: { login: fields.username, passcode: fields.password },
    reconnectDelay: 0,
    debug: () => undefined,
  });
  await connected(client);
  let inFlight: Promise<void>[] = [];
  for (const body of rows) {
    const receipt = randomUUID();
    inFlight.push(new Promise<void>((r) => client.watchForReceipt(receipt, () => r())));
    client.publish({
      destination: `/queue/bench.bare.${ENV}`,
      body,
      headers: { receipt, persistent: 'true' },
    });
    if (inFlight.length >= 500) {
      await Promise.all(inFlight);
      inFlight = [];
    }
  }
  await Promise.all(inFlight);
  await client.deactivate();
}

async function bareRest(url: string, rows: string[]): Promise<void> {
  for (let i = 0; i < rows.length; i += REST_BATCH) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `[${rows.slice(i, i + REST_BATCH).join(',')}]`,
    });
    if (!res.ok) throw new Error(`receiver answered ${res.status}`);
  }
}

/**
 * What a user's own script would do without Tapyard: read the CSV file, type each value, POST the same
 * JSON rows in the same batches. The narrow file has no quoted field, so a split on commas reads it.
 */
async function bareRestFromCsv(url: string, file: string): Promise<void> {
  let batch: string[] = [];
  const post = async (): Promise<void> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `[${batch.join(',')}]`,
    });
    if (!res.ok) throw new Error(`receiver answered ${res.status}`);
    batch = [];
  };
  let rest = '';
  let header = true;
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
    const lines = (rest + (chunk as string)).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      if (header) {
        header = false;
        continue;
      }
      const [id, amount, label, flag, day] = line.split(',');
      batch.push(
        JSON.stringify({ id: Number(id), amount: Number(amount), label, flag: flag === 'true', day }),
      );
      if (batch.length === REST_BATCH) await post();
    }
  }
  if (batch.length > 0) await post();
}

async function main(): Promise<void> {
  const kafka = peer('kafka');
  const amq = peer('activemq');
  let received = 0;
  const receiver = createServer((req, res) => {
    let n = 0;
    const body = req.headers['content-encoding'] === 'gzip' ? req.pipe(createGunzip()) : req;
    // A broken body is refused; it never ends the bench (the rows it held go uncounted: the run fails).
    body.on('error', () => res.writeHead(400).end());
    body.on('data', (c: Buffer) => {
      // One '{' per row object. Counted with indexOf: a byte-by-byte loop made this receiver, shared by
      // both runs, the slowest part of the REST delivery (the loader waited on it most of the time).
      for (let i = c.indexOf(0x7b); i >= 0; i = c.indexOf(0x7b, i + 1)) n++;
    });
    body.on('end', () => {
      received += n;
      res.writeHead(201).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const restPort = (receiver.address() as AddressInfo).port;
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-sinks-'));
  const platform = await startPlatform(ENV, PORT, dir, {
    TAP_EGRESS_ALLOW: `${kafka.brokers},127.0.0.1:${new URL(amq.url).port}`,
    REST_SINK_ALLOW: `127.0.0.1:${restPort}`,
    // BENCH_NODE_OPTIONS: flags for the apps instead of the deployed ones (`--cpu-prof` to profile them).
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
  });
  try {
    const put = (name: string, fields: object) =>
      fetch(`${BASE}/secrets/${name}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(fields),
      });
    await put('kafka', { brokers: kafka.brokers });
    await put('amq', amq);
    const csv = join(dir, 'rows.csv');
    await writeCsv(csv, ROWS, NARROW_COLUMNS);
    const amqCsv = join(dir, 'amq.csv');
    await writeCsv(amqCsv, AMQ_ROWS, NARROW_COLUMNS);
    const rows = jsonRows(ROWS);
    const headers = kafkaHeaders(ROWS);
    const sinks: [string, object, number, string, () => Promise<void>][] = [
      [
        'kafka',
        { kafka: { secretName: 'kafka', topic: `bench.${ENV}`, compression: KAFKA_COMPRESSION } },
        ROWS,
        csv,
        () => bareKafka(kafka.brokers, rows, headers),
      ],
      [
        'activemq',
        { activemq: { secretName: 'amq', destination: `/queue/bench.${ENV}` } },
        AMQ_ROWS,
        amqCsv,
        () => bareStomp(amq, jsonRows(AMQ_ROWS)),
      ],
      [
        'rest',
        {
          rest: {
            url: `http://127.0.0.1:${restPort}/tapyard`,
            batchSize: REST_BATCH,
            ...(REST_CONCURRENCY ? { concurrency: REST_CONCURRENCY } : {}),
            ...(process.env.BENCH_REST_COMPRESSION
              ? { compression: process.env.BENCH_REST_COMPRESSION }
              : {}),
          },
        },
        ROWS,
        csv,
        () => bareRest(`http://127.0.0.1:${restPort}/bare`, rows),
      ],
    ];
    console.log(`narrow file: ${ROWS} rows per sink (${AMQ_ROWS} for ActiveMQ)`);
    for (const [name, destination, count, file, bare] of sinks.filter(([name]) => ONLY.has(name))) {
      await postJson(`${BASE}/pipeline`, {
        name: `bench_${name}`,
        source: { schemaProperties: { fields: NARROW_COLUMNS.map(([n, type]) => ({ name: n, type })) } },
        destination,
      });
      // Rounds in turn, Tapyard then the bare client: the first of either side runs its code cold.
      const viaTapyard: number[] = [];
      const viaBare: number[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const apps = await appsCpu(platform);
        let self = process.cpuUsage();
        const began = Date.now();
        let token = '';
        let answered = 0;
        let tapyardSeconds = 0;
        const seen = await timed(async () => {
          token = await uploadFile(BASE, file, `bench_${name}`);
          answered = Date.now() - began;
          tapyardSeconds = await secondsToDone(BASE, `pipelinetoken=${token}`, began);
        });
        const steps = await timeline(token, began, answered);
        const after = await appsCpu(platform);
        const tapyardCpu = {
          api: after.api - apps.api,
          main: after.main - apps.main,
          stages: after.stages - apps.stages,
          bench: benchCpu(self),
        };
        const before = received;
        self = process.cpuUsage();
        const bareSeconds = await timed(bare);
        const bareCpu = benchCpu(self);
        if (name === 'rest' && received - before !== count)
          throw new Error(
            `the REST receiver counted ${received - before} rows of the bare client's ${count}`,
          );
        // The broker keeps only a round's messages: 200,000 left queued by five rounds once took its heap.
        if (name === 'activemq') {
          await drain(amq, `/queue/bench.${ENV}`);
          await drain(amq, `/queue/bench.bare.${ENV}`);
        }
        viaTapyard.push(count / tapyardSeconds);
        viaBare.push(count / bareSeconds);
        console.log(
          `${name.padEnd(9)} round ${round}: Tapyard ${Math.round(count / tapyardSeconds).toLocaleString('en')} rows/s ` +
            `(upload to the job's end), bare client ${Math.round(count / bareSeconds).toLocaleString('en')} rows/s: ` +
            `ratio ${(bareSeconds / tapyardSeconds).toFixed(2)}\n` +
            `${''.padEnd(9)} CPU s: Tapyard's API ${tapyardCpu.api.toFixed(2)}, worker main thread ` +
            `${tapyardCpu.main.toFixed(2)} and stage threads ${tapyardCpu.stages.toFixed(2)}, this process ` +
            `(uploader, poller${name === 'rest' ? ', receiver' : ''}) ${tapyardCpu.bench.toFixed(2)}; ` +
            `bare ${bareCpu.toFixed(2)} (${bareSeconds.toFixed(2)} s)\n${''.padEnd(9)} ${steps}; ` +
            `seen by a poll ${Math.round((seen - tapyardSeconds) * 1000)} ms later`,
        );
      }
      const a = median(viaTapyard);
      const b = median(viaBare);
      console.log(
        `${name.padEnd(9)} Tapyard ${Math.round(a).toLocaleString('en')} rows/s, bare client ` +
          `${Math.round(b).toLocaleString('en')} rows/s (medians of ${ROUNDS} rounds): ratio ${(a / b).toFixed(2)}`,
      );
      if (name === 'rest') {
        const fromCsv =
          count / (await timed(() => bareRestFromCsv(`http://127.0.0.1:${restPort}/bare`, file)));
        console.log(
          `${''.padEnd(9)} (bare client reading the CSV itself, typing each value, same JSON and batches: ` +
            `${Math.round(fromCsv).toLocaleString('en')} rows/s: ratio ${(a / fromCsv).toFixed(2)})`,
        );
      }
      if (name === 'kafka') {
        const valuesOnly = count / (await timed(() => bareKafka(kafka.brokers, rows, null)));
        console.log(
          `${''.padEnd(9)} (bare client, values without headers: ${Math.round(valuesOnly).toLocaleString('en')} rows/s: ` +
            `ratio ${(a / valuesOnly).toFixed(2)})`,
        );
      }
    }
    // Every row Tapyard sent arrived (a lost batch would flatter its figure).
    // Tapyard's and the bare client's of each round, and the bare client's from the CSV once.
    if (ONLY.has('rest') && received !== ROWS * (2 * ROUNDS + 1))
      throw new Error(`the REST receiver counted ${received} rows, not ${ROWS * (2 * ROUNDS + 1)}`);
  } finally {
    await platform.stop();
    receiver.close();
    await rm(dir, { recursive: true, force: true });
  }
}

checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
