import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { upload, waitForJob } from './support/ingest';
import { readTopic } from './support/kafka-topic';
import { Relay, cuttableProxy } from './support/net';
import { RestSink } from './support/rest-sink';
import { StompCollector } from './support/stomp-collector';
import { peerFields } from './support/vector-peers';

/**
 * One upload, four destinations: PostgreSQL, Kafka, ActiveMQ and a REST endpoint, all real peers on
 * loopback. Every destination reports its own events; consumers get every row once per job, with the
 * job's tokens in the headers; one failing destination turns the rollup to warning, the others commit.
 */
describe('sinks: one job fans out to PostgreSQL, Kafka, ActiveMQ and REST', () => {
  const env = uniqueEnvironment('fan');
  const schema = `fan_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const sink = new RestSink();
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let amq: StompCollector;
  // To the broker's listener that advertises 127.0.0.1:19094, a port the egress policy does not allow.
  let relayed: Relay;
  const kafkaBrokers = () => peerFields('kafka').brokers;
  const amqFields = () => peerFields('activemq');
  const csv = (n: number) =>
    `id,city\n${Array.from({ length: n }, (_, i) => `${i + 1},c${i % 7}`).join('\n')}\n`;

  beforeAll(async () => {
    await sink.start();
    relayed = await cuttableProxy(Number(process.env.TAPYARD_KAFKA_RELAYED_PORT ?? 9094));
    const brokerPort = new URL(`kafka://${kafkaBrokers()}`).port;
    const amqPort = new URL(amqFields().url).port;
    const flags = {
      TAPYARD_ENV: env,
      TAP_EGRESS_ALLOW: `127.0.0.1:${brokerPort},127.0.0.1:${amqPort},127.0.0.1:${relayed.port}`,
      REST_SINK_ALLOW: `127.0.0.1:${sink.port}`,
      LOAD_RETRY_ATTEMPTS: '1',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await pg.query(`CREATE SCHEMA "${schema}"`);
    await api.http.put('/api/v1/secrets/kafka').send({ brokers: kafkaBrokers() }).expect(200);
    await api.http.put('/api/v1/secrets/amq').send(amqFields()).expect(200);
    amq = await StompCollector.open(amqFields(), `/queue/fan.${env}.>`);
  }, 120000);
  afterAll(async () => {
    await amq.close();
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
    await sink.stop();
    await relayed.close();
  });

  const pipeline = (name: string, rest: Record<string, unknown>) =>
    api.http
      .post('/api/v1/pipeline')
      .send({
        name,
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: {
            fields: [
              { name: 'id', type: 'int' },
              { name: 'city', type: 'string' },
            ],
          },
        },
        destination: {
          database: { schema, table: name },
          kafka: { secretName: 'kafka', topic: `fan.${env}.${name}`, keyColumn: 'city' },
          activemq: { secretName: 'amq', destination: `/queue/fan.${env}.${name}` },
          rest,
        },
      })
      .expect(200);

  it('delivers every row once to each, with the job in the headers and each loader in the events', async () => {
    await pipeline('all', { url: `http://127.0.0.1:${sink.port}/all`, batchSize: 50 });
    const token = await upload(api.http, 'all', csv(120), 'all.csv', 'pub-fan-1');
    const { rollup, events } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('success');
    for (const loader of ['PostgresLoader', 'KafkaLoader', 'ActiveMQLoader', 'RestEndpointRunner']) {
      const states = events.filter((e) => e.processName === loader).map((e) => e.state);
      expect([loader, states[0], states[states.length - 1]]).toEqual([loader, 'begin', 'end']);
    }
    expect(Number((await pg.query(`SELECT count(*) FROM "${schema}".all`)).rows[0].count)).toBe(120);
    expect(sink.rows('/all')).toHaveLength(120);

    const fromKafka = await readTopic(kafkaBrokers(), `fan.${env}.all`);
    expect(fromKafka.map((m) => m.value.id).sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: 120 }, (_, i) => i + 1),
    );
    expect(fromKafka[0].headers).toMatchObject({
      'tapyard-pipeline': 'all',
      'tapyard-pipeline-token': token,
      'tapyard-publisher-token': 'pub-fan-1',
      'tapyard-row': '2',
      'tapyard-message-id': `${token}:2`,
    });
    expect(fromKafka.find((m) => m.value.id === 9)?.key).toBe('c1');

    const fromAmq = await amq.settled(`/queue/fan.${env}.all`);
    expect(fromAmq.map((m) => m.id).sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: 120 }, (_, i) => i + 1),
    );
  });

  it('one failing destination: the others commit, the rollup says warning and names the failure', async () => {
    await pipeline('partial', { url: 'http://127.0.0.1:1/nowhere' });
    const token = await upload(api.http, 'partial', csv(30), 'partial.csv');
    const { rollup, events } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('warning');
    expect(events.filter((e) => e.state === 'error').map((e) => e.processName)).toEqual([
      'RestEndpointRunner',
    ]);
    expect(Number((await pg.query(`SELECT count(*) FROM "${schema}".partial`)).rows[0].count)).toBe(30);
    expect(await readTopic(kafkaBrokers(), `fan.${env}.partial`)).toHaveLength(30);
    expect(await amq.settled(`/queue/fan.${env}.partial`)).toHaveLength(30);
  });

  it('Kafka: a broker the cluster names is connected only when the egress policy allows it', async () => {
    // The bootstrap address is allowed; the broker its metadata names (127.0.0.1:19094) is not.
    await api.http
      .put('/api/v1/secrets/kafka-relayed')
      .send({ brokers: `127.0.0.1:${relayed.port}` })
      .expect(200);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'leader',
        source: { schemaProperties: { fields: [{ name: 'id', type: 'int' }] } },
        destination: { kafka: { secretName: 'kafka-relayed', topic: `fan.${env}.leader` } },
      })
      .expect(200);
    const token = await upload(api.http, 'leader', 'id\n1\n2\n', 'leader.csv');
    const { rollup, events } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('error');
    expect(events.find((e) => e.processName === 'KafkaLoader' && e.state === 'error')?.description).toMatch(
      /the Kafka broker is not allowed: connection to 127\.0\.0\.1:19094 refused by the egress policy/,
    );
  });

  it('/health/services probes the real brokers configured for the platform (KAFKA_BROKERS, ACTIVEMQ_URL)', async () => {
    const f = amqFields();
    const probing = await startApi({
      TAPYARD_ENV: env,
      KAFKA_BROKERS: kafkaBrokers(),
      ACTIVEMQ_URL: f.url,
      ACTIVEMQ_USER: f.username,
      ACTIVEMQ_PASSWORD: f.password,
    });
    try {
      const health = (await probing.http.get('/api/v1/health/services').expect(200)).body;
      expect(health.kafka).toMatchObject({ status: 'up' });
      expect(health.activemq).toMatchObject({ status: 'up' });
      const available = (await probing.http.get('/api/v1/destinations/available').expect(200))
        .body as string[];
      expect(available).toEqual(expect.arrayContaining(['kafka', 'activemq']));
    } finally {
      await probing.close();
    }
    const wrong = await startApi({
      TAPYARD_ENV: env,
      ACTIVEMQ_URL: f.url,
      ACTIVEMQ_USER: f.username,
      ACTIVEMQ_PASSWORD: 'wrong',
    });
    try {
      const health = (await wrong.http.get('/api/v1/health/services').expect(200)).body;
      expect(health.activemq.status).toBe('down');
      expect(JSON.stringify(health)).not.toContain(f.password);
    } finally {
      await wrong.close();
    }
  });
});
