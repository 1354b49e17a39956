import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline, upload, waitForJob } from './support/ingest';

/**
 * Inputs a new user meets with public conformance files and everyday client habits (issue 18):
 * every job ends, malformed JSON loads nothing it does not hold, CSV keeps "" apart from NULL.
 */
describe('ingestion of hostile and unusual input', () => {
  const env = uniqueEnvironment('hostile');
  const schema = 'ingest_test';
  const table = (n: string) => `${n}_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;

  const jsonPipeline = (name: string) => ({
    ...csvPipeline(name, table(name), [['_json', 'string']]),
    source: { schemaProperties: { fields: [{ name: '_json', type: 'string' }] } },
  });
  const count = async (name: string): Promise<number> => {
    const res = await pg.query(`SELECT to_regclass($1) AS t`, [`${schema}."${table(name)}"`]);
    if (res.rows[0].t === null) return 0;
    return Number((await pg.query(`SELECT count(*) AS n FROM ${schema}."${table(name)}"`)).rows[0].n);
  };
  const run = async (pipeline: string, content: string | Buffer, filename: string): Promise<RollupAnswer> =>
    waitForJob(api.http, await upload(api.http, pipeline, content, filename), 60_000);

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await api.http.post('/api/v1/pipeline').send(jsonPipeline('j')).expect(200);
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('c', table('c'), [
          ['id', 'int'],
          ['a', 'string'],
          ['b', 'string'],
        ]),
      )
      .expect(200);
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('a control byte outside a JSON string ends the job with an error, and the worker goes on', async () => {
    for (const bad of [Buffer.from([0x5b, 0x00, 0x5d]), Buffer.from([0x5b, 0x0c, 0x5d])]) {
      const { rollup } = await run('j', bad, 'ctl.json');
      expect(rollup.status).toBe('error');
      expect(rollup.jobs[0].lastError).toEqual({
        processName: 'DataQuality',
        description: expect.stringMatching(
          /^the JSON array is not well-formed at byte offset 1 \(line 1\): /,
        ),
      });
    }
    expect((await run('j', '[{"ok":1}]', 'ok.json')).rollup.status).toBe('success');
  });

  it('malformed JSON arrays and documents end error and load nothing', async () => {
    const before = await count('j');
    for (const text of [
      '["",]',
      '[1,]',
      '{"a": true} "x"',
      '[1,,2]',
      '{"a":"b"}#',
      '[{"a":1}, {"a":2}',
      '[1]]',
    ]) {
      const { rollup } = await run('j', text, 'bad.json');
      expect({ text, status: rollup.status }).toEqual({ text, status: 'error' });
      expect(rollup.jobs[0].lastError?.description).toMatch(
        /not well-formed at byte offset \d+|after the end of the JSON|all 1 record\(s\) were rejected/,
      );
    }
    expect(await count('j')).toBe(before);
  });

  it('JSON Lines: a bad line is a reject naming its line; a file of only bad lines ends error', async () => {
    const mixed = await run('j', '{"a":1}\n{"a": 2\n{"a":3} 4\n{"a":5}\n', 'f.jsonl');
    expect(mixed.rollup.status).toBe('warning');
    const rejects = await pg.query(
      `SELECT line, reason FROM ${schema}."${table('j')}_rejects" ORDER BY line`,
    );
    expect(rejects.rows.map((r: { line: string; reason: string }) => [Number(r.line), r.reason])).toEqual(
      expect.arrayContaining([
        [2, expect.stringMatching(/^line 2 is not valid JSON: /)],
        [3, expect.stringMatching(/^line 3 holds more than one JSON value/)],
      ]),
    );
    const allBad = await run('j', '{"a": tru}\n[1,]\n', 'g.ndjson');
    expect(allBad.rollup.status).toBe('error');
    expect(allBad.rollup.jobs[0].lastError?.description).toMatch(
      /^nothing was loaded: all 2 record\(s\) were rejected \(the first: line 1: line 1 is not valid JSON: /,
    );
  });

  it('regex rules run in linear time; a pattern RE2 cannot run is refused when the pipeline is saved', async () => {
    const withRule = (pattern: string) =>
      csvPipeline('r', table('r'), [['v', 'string']], {
        dataQuality: { rules: [{ type: 'regex', column: 'v', pattern }] },
      });
    const refused = await api.http.post('/api/v1/pipeline').send(withRule('^(a)\\1$')).expect(400);
    expect(refused.body.details).toEqual([
      {
        field: 'dataQuality.rules[v].pattern',
        problem: expect.stringMatching(
          /^pattern '\^\(a\)\\1\$' is not a valid regular expression: .*no backreferences or lookaround/,
        ),
      },
    ]);
    // V8 backtracked about 25 µs a character on it and re2js about 10: refused, with the size it has.
    const tooLarge = await api.http
      .post('/api/v1/pipeline')
      .send(withRule('^a*?a{0,1000}a{0,8}$'))
      .expect(400);
    expect(tooLarge.body.details).toEqual([
      {
        field: 'dataQuality.rules[v].pattern',
        problem: expect.stringMatching(
          /is not a valid regular expression: it compiles to \d+ instructions, more than the 1024 that run in linear time/,
        ),
      },
    ]);
    // A length bound on a class compiles to some 500 instructions: common, and kept.
    await api.http.post('/api/v1/pipeline').send(withRule('^[A-Za-z0-9 ]{1,255}$')).expect(200);
    // Every rule of a column runs on each of its values: 17 on one column are refused, naming it.
    const many = csvPipeline('r', table('r'), [['v', 'string']], {
      dataQuality: {
        rules: Array.from({ length: 17 }, (_, i) => ({ type: 'regex', column: 'v', pattern: `^a{${i}}` })),
      },
    });
    const crowded = await api.http.post('/api/v1/pipeline').send(many).expect(400);
    expect(crowded.body.details).toEqual([
      {
        field: 'dataQuality.rules[v]',
        problem: 'has 17 rules, more than the 16 a column may have (each runs on every value)',
      },
    ]);
    await api.http.post('/api/v1/pipeline').send(withRule('^(a+)+$')).expect(200);
    const started = Date.now();
    const { rollup } = await run('r', `v\naaa\n${'a'.repeat(5000)}!\n`, 'r.csv');
    expect(rollup.status).toBe('warning');
    expect(Date.now() - started).toBeLessThan(20_000);
    const rejects = await pg.query(`SELECT reason FROM ${schema}."${table('r')}_rejects"`);
    expect(rejects.rows.map((r: { reason: string }) => r.reason)).toEqual([
      expect.stringMatching(/does not match \/\^\(a\+\)\+\$\/ \(rule regex\)$/),
    ]);
  });

  it('CSV: a quoted empty field is an empty string, an unquoted one is NULL; nullValues name more', async () => {
    expect((await run('c', 'id,a,b\n1,"",""\n2,,\n', 'e.csv')).rollup.status).toBe('success');
    const got = await pg.query(`SELECT id, a, b FROM ${schema}."${table('c')}" ORDER BY id`);
    expect(got.rows).toEqual([
      { id: 1, a: '', b: '' },
      { id: 2, a: null, b: null },
    ]);
    const plain = csvPipeline('n', table('n'), [
      ['id', 'int'],
      ['a', 'string'],
    ]);
    const withNulls = {
      ...plain,
      source: {
        ...plain.source,
        fileAttributes: { csvAttributes: { delimiter: ',', header: true, nullValues: ['NA', ''] } },
      },
    };
    await api.http.post('/api/v1/pipeline').send(withNulls).expect(200);
    const stored = await api.http.get('/api/v1/pipeline').query({ pipeline: 'n' }).expect(200);
    expect(stored.body.source.fileAttributes.csvAttributes.nullValues).toEqual(['NA', '']);
    const res = await run('n', 'id,a\n1,NA\n2,"NA"\nNA,x\n3,\n', 'n.csv');
    expect(res.rollup.status).toBe('success');
    const n = await pg.query(`SELECT id, a FROM ${schema}."${table('n')}" ORDER BY id NULLS FIRST`);
    expect(n.rows).toEqual([
      { id: null, a: 'x' },
      { id: 1, a: null },
      { id: 2, a: 'NA' },
      { id: 3, a: null },
    ]);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        ...withNulls,
        source: { ...withNulls.source, fileAttributes: { csvAttributes: { nullValues: 'NA' } } },
      })
      .expect(400);
  });
});
