import { readFile, readdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { readTopic } from './support/kafka-topic';
import { peerFields } from './support/vector-peers';

/** The local broker's log directory (scripts/peers/kafka.sh: `log.dirs`). */
const KAFKA_DATA = join(process.env.TAPYARD_HOME ?? join(homedir(), '.cache', 'tapyard'), 'kafka', 'data');
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

/**
 * The codec of every data batch the broker stored for `topic`, read from its log segments (record
 * batch v2: the attributes at byte 21, the codec in their low 3 bits; transaction markers skipped).
 */
async function storedCodecs(topic: string): Promise<Set<string>> {
  const codecs = new Set<string>();
  const dirs = (await readdir(KAFKA_DATA)).filter((d) => d.startsWith(`${topic}-`));
  for (const dir of dirs) {
    for (const file of (await readdir(join(KAFKA_DATA, dir))).filter((f) => f.endsWith('.log'))) {
      const log = await readFile(join(KAFKA_DATA, dir, file));
      for (let at = 0; at + 23 <= log.length; at += 12 + log.readInt32BE(at + 8)) {
        const attributes = log.readInt16BE(at + 21);
        if ((attributes & 0x20) === 0) codecs.add(CODECS[attributes & 0x07]);
      }
    }
  }
  return codecs;
}

/**
 * A Kafka section's `compression` against the local broker: the record batches it stores carry the
 * codec asked for (gzip when none is), and a read_committed consumer reads every row back.
 */
describe('Kafka sink: the codec of its record batches', () => {
  const env = uniqueEnvironment('kz');
  const brokers = () => peerFields('kafka').brokers;
  let api: TestApi;
  let worker: TestWorker;
  const csv = `id,city\n${Array.from({ length: 300 }, (_, i) => `${i + 1},city ${i % 7}`).join('\n')}\n`;

  beforeAll(async () => {
    const flags = { TAPYARD_ENV: env, TAP_EGRESS_ALLOW: brokers(), LOAD_RETRY_ATTEMPTS: '1' };
    api = await startApi(flags);
    worker = await startWorker(flags);
    await api.http.put('/api/v1/secrets/kafka').send({ brokers: brokers() }).expect(200);
  }, 120000);
  afterAll(async () => {
    await worker?.close();
    await api?.close();
  });

  const pipeline = (name: string, compression?: string) =>
    api.http.post('/api/v1/pipeline').send(
      csvPipeline(
        name,
        name,
        [
          ['id', 'int'],
          ['city', 'string'],
        ],
        {
          destination: {
            kafka: {
              secretName: 'kafka',
              topic: `kz.${env}.${name}`,
              ...(compression ? { compression } : {}),
            },
          },
        },
      ),
    );

  it.each([
    ['zstd', 'zstd'],
    ['lz4', 'lz4'],
    ['snappy', 'snappy'],
    ['none', 'none'],
    [undefined, 'gzip'],
  ])('compression %s: the broker stores %s batches, and every row reads back', async (asked, stored) => {
    const name = asked ?? 'default';
    await pipeline(name, asked).expect(200);
    const token = await upload(api.http, name, csv, `${name}.csv`);
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
    const topic = `kz.${env}.${name}`;
    expect(await storedCodecs(topic)).toEqual(new Set([stored]));
    const ids = (await readTopic(brokers(), topic)).map((m) => Number(m.value.id)).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
  });

  it('refuses a codec the brokers do not have, naming the field', async () => {
    const res = await pipeline('brotli', 'brotli').expect(400);
    expect(JSON.stringify(res.body)).toContain('compression');
  });
});
