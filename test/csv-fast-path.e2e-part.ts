import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';

/**
 * The CSV fast path (clean chunks to COPY … CSV unparsed) against the validating path on the same
 * file, through the real upload, worker and PostgreSQL: the same rows, the same typed values, the
 * same rejects with the same line numbers and reasons.
 */
describe('CSV fast path vs the validating path', () => {
  const columns: [string, string][] = [
    ['id', 'int'],
    ['amount', 'double'],
    ['label', 'string'],
    ['flag', 'boolean'],
    ['day', 'date'],
    ['at', 'timestamp'],
  ];
  const runs: { name: string; fast: boolean; env: string; api?: TestApi; worker?: TestWorker }[] = [
    { name: 'fast', fast: true, env: uniqueEnvironment('fastpath') },
    { name: 'reference', fast: false, env: uniqueEnvironment('refpath') },
  ];
  const table = (env: string) => `fp_${env.replace(/[^a-z0-9]/g, '_')}`;
  let pg: Client;

  /** 60,000 rows (several 1 MiB chunks), with trouble spread through the file. */
  function file(): string {
    let s = 'id,amount,label,flag,day,at\r\n';
    for (let i = 1; i <= 60_000; i++) {
      const d = String(1 + (i % 28)).padStart(2, '0');
      let row = `${i},${(i * 0.37).toFixed(2)},"label ${i}, quoted",${i % 2 === 0},2026-03-${d},2026-03-${d} 10:${String(i % 60).padStart(2, '0')}:00`;
      if (i === 7) row = `${i},-0,"multi\r\nline ""label""",yes,2026-03-01,2026-03-01T00:00:00+02`;
      if (i === 25_000) row = `${i},abc,bad amount,true,2026-03-01,2026-03-01 10:00`; // a reject in a middle chunk
      if (i === 58_000) row = `${i},1.5,,NA,2026-02-30,2026-03-01 10:00`; // NA boolean (NULL), bad date
      if (i === 59_000) row = `${i},NULL,null token,f,,`; // null tokens: the validating path's rules
      if (i === 59_999) row = `${i},1e-400,underflow,t,2026-03-01,2026-03-01 10:00`;
      s += row + '\r\n';
    }
    return s;
  }

  beforeAll(async () => {
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    for (const run of runs) {
      const flags = { TAPYARD_ENV: run.env, UPLOAD_LIMIT: '16mb', CSV_FAST_PATH: String(run.fast) };
      run.api = await startApi(flags);
      run.worker = await startWorker(flags);
      await run.api.http
        .post('/api/v1/pipeline')
        .send(csvPipeline('fp', table(run.env), columns))
        .expect(200);
    }
  });
  afterAll(async () => {
    for (const run of runs) {
      await run.worker?.close();
      await run.api?.close();
    }
    await pg.end();
  });

  it('stores the same rows and keeps the same rejects, and says which path it took', async () => {
    const csv = file();
    const results = [];
    for (const run of runs) {
      const api = run.api as TestApi;
      const token = await upload(api.http, 'fp', csv, 'rows.csv');
      const { rollup, events } = await waitForJob(api.http, token, 90_000);
      expect(rollup.status).toBe('warning');
      const note = events.find((e) => e.processName === 'DataQuality' && e.state === 'begin')?.description;
      expect(note?.includes('unparsed')).toBe(run.fast);
      const end = events.find((e) => e.processName === 'DataQuality' && e.state === 'end')?.description ?? '';
      const unparsed = Number(/(\d+) of them went to the destination unparsed/.exec(end)?.[1] ?? 0);
      // Most chunks are clean: only the ones holding a reject, a null token or the multi-line label are parsed.
      if (run.fast) expect(unparsed).toBeGreaterThan(30_000);
      else expect(unparsed).toBe(0);
      const t = table(run.env);
      const rows = await pg.query(
        `SELECT md5(string_agg(format('%s|%s|%s|%s|%s|%s', id, amount::text, label, flag, day, at), E'\\n' ORDER BY id)) AS digest,
                count(*) AS n FROM ingest_test."${t}"`,
      );
      const rejects = await pg.query(
        `SELECT line, stage, reason FROM ingest_test."${t}_rejects" ORDER BY line`,
      );
      const sample = await pg.query(
        `SELECT id, amount::text AS amount, label, flag, day::text AS day, at FROM ingest_test."${t}" WHERE id IN (7, 58000, 59000) ORDER BY id`,
      );
      results.push({ digest: rows.rows[0], rejects: rejects.rows, sample: sample.rows });
    }
    const [fast, reference] = results;
    expect(fast).toEqual(reference);
    // And what they agree on is right: three rejects at their physical lines (the multi-line label
    // on line 8 makes every later line one more than its id + 1), and the odd values kept exactly.
    expect(reference.rejects.map((r: { line: string }) => Number(r.line))).toEqual([25_002, 58_002, 60_001]);
    expect(reference.digest.n).toBe('59997');
    expect(reference.sample[0]).toMatchObject({
      id: 7,
      amount: '-0',
      label: 'multi\r\nline "label"',
      flag: true,
    });
    expect(reference.sample.find((r: { id: number }) => r.id === 59_000)).toMatchObject({
      amount: null,
      label: 'null token',
      flag: false,
      day: null,
      at: null,
    });
  });

  it('writes clean chunks as binary COPY where the table allows, storing what the validating path stores', async () => {
    // No timestamp column: every type here has an exact binary form (copy-binary.ts). Some 11 MB: three
    // staged parts, whose buffers the encoder gives back to hold the next ones. The fast run's
    // table exists already with a wider id than the schema's: the encoder writes what the table declares.
    const binaryColumns = columns.filter(([name]) => name !== 'at');
    let csv = 'id,amount,label,flag,day\n';
    for (let i = 1; i <= 250_000; i++) {
      const d = String(1 + (i % 28)).padStart(2, '0');
      let row = `${i},${(i * 0.37).toFixed(2)},"label ${i}, ""quoted""",${i % 3 === 0 ? 'Yes' : 'f'},2026-03-${d}`;
      if (i === 5) row = `${i},-0,ünï😀,,`; // NULLs, -0, non-ASCII
      if (i === 6) row = `+00${i},1.7976931348623157e300,"",1,0001-01-01`;
      if (i === 7) row = `${i},.1e-300,"multi\nline",n,9999-12-31`;
      if (i === 200_000) row = `${i},abc,bad amount,true,2026-03-01`; // a reject in a later chunk
      csv += row + '\n';
    }
    const results = [];
    for (const run of runs) {
      const api = run.api as TestApi;
      const t = `${table(run.env)}_bin`;
      if (run.fast) {
        await pg.query('CREATE SCHEMA IF NOT EXISTS ingest_test');
        await pg.query(
          `CREATE TABLE ingest_test."${t}" (id bigint, amount double precision, label text, flag boolean, day date)`,
        );
      }
      await api.http
        .post('/api/v1/pipeline')
        .send(csvPipeline('fpbin', t, binaryColumns))
        .expect(200);
      const { rollup, events } = await waitForJob(
        api.http,
        await upload(api.http, 'fpbin', csv, 'binary.csv'),
        90_000,
      );
      expect(rollup.status).toBe('warning');
      const end = events.find((e) => e.processName === 'DataQuality' && e.state === 'end')?.description ?? '';
      const binary = Number(/(\d+) written as binary COPY/.exec(end)?.[1] ?? 0);
      if (run.fast) expect(binary).toBeGreaterThan(150_000);
      else expect(binary).toBe(0);
      const rows = await pg.query(
        `SELECT md5(string_agg(format('%s|%s|%s|%s|%s', id, amount::text, label, flag, day), E'\\n' ORDER BY id)) AS digest,
                count(*) AS n FROM ingest_test."${t}"`,
      );
      const rejects = await pg.query(
        `SELECT line, stage, reason FROM ingest_test."${t}_rejects" ORDER BY line`,
      );
      const sample = await pg.query(
        `SELECT id::int AS id, amount::text AS amount, label, flag, day::text AS day FROM ingest_test."${t}" WHERE id BETWEEN 5 AND 7 ORDER BY id`,
      );
      results.push({ digest: rows.rows[0], rejects: rejects.rows, sample: sample.rows });
    }
    const [fast, reference] = results;
    expect(fast).toEqual(reference);
    expect(reference.digest.n).toBe('249999');
    // Line 200,002: the multi-line label on line 8 moves every later line one down.
    expect(reference.rejects.map((r: { line: string }) => Number(r.line))).toEqual([200_002]);
    expect(reference.sample.map((r: { id: number | string }) => Number(r.id))).toEqual([5, 6, 7]);
    expect(reference.sample[0]).toMatchObject({ amount: '-0', label: 'ünï😀', flag: null, day: null });
    expect(reference.sample[1]).toMatchObject({ label: '', flag: true, day: '0001-01-01' });
    expect(reference.sample[2]).toMatchObject({ amount: '1e-301', label: 'multi\nline', day: '9999-12-31' });
  });

  it('writes binary COPY in the replace and merge modes too (merge: into its temporary table)', async () => {
    const api = runs[0].api as TestApi;
    const binaryColumns = columns.filter(([name]) => name !== 'at');
    const file = (from: number, to: number, amount: (i: number) => string) => {
      let csv = 'id,amount,label,flag,day\n';
      for (let i = from; i <= to; i++) csv += `${i},${amount(i)},label ${i},${i % 2 === 0},2026-03-01\n`;
      return csv;
    };
    const load = async (pipeline: string, csv: string) => {
      const { rollup, events } = await waitForJob(
        api.http,
        await upload(api.http, pipeline, csv, 'm.csv'),
        90_000,
      );
      expect(rollup.status).toBe('success');
      const end = events.find((e) => e.processName === 'DataQuality' && e.state === 'end')?.description ?? '';
      expect(Number(/(\d+) written as binary COPY/.exec(end)?.[1] ?? 0)).toBeGreaterThan(0);
    };
    const sum = async (t: string) =>
      (
        await pg.query<{ n: string; total: string }>(
          `SELECT count(*) AS n, sum(amount)::text AS total FROM ingest_test."${t}"`,
        )
      ).rows[0];
    const merged = `${table(runs[0].env)}_merge`;
    await api.http
      .post('/api/v1/pipeline')
      .send({
        ...csvPipeline('fpmerge', merged, binaryColumns),
        destination: {
          database: { dbName: 'tapyard_test', schema: 'ingest_test', table: merged, usePostgres: true },
          writeMode: 'merge',
          primaryKey: ['id'],
        },
      })
      .expect(200);
    // 10,000 rows (some 400 KB), then 5,000 of them again with new amounts and 5,000 new ones.
    await load(
      'fpmerge',
      file(1, 10_000, () => '1'),
    );
    await load(
      'fpmerge',
      file(5_001, 15_000, () => '2'),
    );
    expect(await sum(merged)).toEqual({ n: '15000', total: String(5_000 + 2 * 10_000) });
    const replaced = `${table(runs[0].env)}_replace`;
    await api.http
      .post('/api/v1/pipeline')
      .send({
        ...csvPipeline('fpreplace', replaced, binaryColumns),
        destination: {
          database: { dbName: 'tapyard_test', schema: 'ingest_test', table: replaced, usePostgres: true },
          writeMode: 'replace',
        },
      })
      .expect(200);
    await load(
      'fpreplace',
      file(1, 10_000, () => '1'),
    );
    await load(
      'fpreplace',
      file(20_001, 29_000, () => '3'),
    );
    expect(await sum(replaced)).toEqual({ n: '9000', total: String(3 * 9_000) });
  });

  it('keeps a load with data-quality rules on the fast path, rejecting what the validating path rejects', async () => {
    const rules = [
      { type: 'not_null', column: 'day' },
      { type: 'range', column: 'amount', min: 0, max: 22_150 },
      { type: 'regex', column: 'label', pattern: '^label \\d+' },
      { type: 'allowed_values', column: 'flag', values: ['true', 'false'] },
    ];
    let csv = 'id,amount,label,flag,day,at\n';
    for (let i = 1; i <= 60_000; i++) {
      const d = String(1 + (i % 28)).padStart(2, '0');
      let row = `${i},${(i * 0.37).toFixed(2)},"label ${i}, quoted",${i % 2 === 0},2026-03-${d},2026-03-${d} 10:00`;
      if (i === 10_000) row = `${i},1.5,"  label ${i}  ",true,2026-03-01,`; // trimmed for the rules, kept as is
      if (i === 20_000) row = `${i},-5,label,true,2026-03-01,`; // below the range
      if (i === 20_100) row = `${i},1.5,"no label",true,2026-03-01,`; // no match
      if (i === 20_200) row = `${i},1.5,label ${i},yes,2026-03-01,`; // a boolean, not an allowed value
      if (i === 20_300) row = `${i},1.5,label ${i},true,,`; // null
      csv += row + '\n';
    }
    const results = [];
    for (const run of runs) {
      const api = run.api as TestApi;
      const t = `${table(run.env)}_dq`;
      await api.http
        .post('/api/v1/pipeline')
        .send(csvPipeline('fpdq', t, columns, { dataQuality: { rules } }))
        .expect(200);
      const { rollup, events } = await waitForJob(
        api.http,
        await upload(api.http, 'fpdq', csv, 'rules.csv'),
        90_000,
      );
      expect(rollup.status).toBe('warning');
      const end = events.find((e) => e.processName === 'DataQuality' && e.state === 'end')?.description ?? '';
      const unparsed = Number(/(\d+) of them went to the destination unparsed/.exec(end)?.[1] ?? 0);
      // Only the chunks holding a reject (in one place, and above the range at the end) are parsed.
      if (run.fast) expect(unparsed).toBeGreaterThan(25_000);
      else expect(unparsed).toBe(0);
      const rows = await pg.query(
        `SELECT md5(string_agg(format('%s|%s|%s|%s|%s|%s', id, amount::text, label, flag, day, at), E'\\n' ORDER BY id)) AS digest,
                count(*) AS n FROM ingest_test."${t}"`,
      );
      const rejects = await pg.query(
        `SELECT line, stage, reason FROM ingest_test."${t}_rejects" ORDER BY line`,
      );
      results.push({ digest: rows.rows[0], rejects: rejects.rows });
    }
    const [fast, reference] = results;
    expect(fast).toEqual(reference);
    const lines = reference.rejects.map((r: { line: string }) => Number(r.line));
    // Four records that break a rule, then every amount above 22,150 (ids 59,865 on).
    expect(lines.slice(0, 4)).toEqual([20_001, 20_101, 20_201, 20_301]);
    expect(lines.length).toBe(4 + 136);
    expect(reference.digest.n).toBe(String(60_000 - 140));
  });
});
