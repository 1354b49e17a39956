import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { upload, waitForJob } from './support/ingest';
import { RestSink } from './support/rest-sink';

/**
 * A CSV upload into a JSON sink on the fast path (rows written from clean chunks' fields in the
 * stage thread) against the validating path on the same file, through the real upload, worker and
 * an HTTP receiver on loopback: the same JSON texts, the same rejects at the same lines, and the
 * lines of rows the receiver refuses the same.
 */
describe('JSON sinks: CSV fast path vs the validating path', () => {
  const sink = new RestSink();
  const runs: { name: string; fast: boolean; env: string; api?: TestApi; worker?: TestWorker }[] = [
    { name: 'fast', fast: true, env: uniqueEnvironment('jsonfast') },
    { name: 'reference', fast: false, env: uniqueEnvironment('jsonref') },
  ];
  let pg: Client;

  /** 40,000 rows (several 1 MiB chunks) of every type, with trouble spread through the file. */
  function file(): string {
    let s = 'at,id,amount,ratio,label,flag,day\n';
    const flags = ['true', 'f', 'YES', 'no', '1', '0', 'T', 'n'];
    for (let i = 1; i <= 40_000; i++) {
      const d = String(1 + (i % 28)).padStart(2, '0');
      const id = i % 7 === 0 ? `${9_007_199_254_740_000 + i * 13}` : i % 11 === 0 ? `+00${i}` : String(i);
      const amount = i % 5 === 0 ? `.${i % 10}` : `${(i * 0.37).toFixed(i % 3)}`;
      const ratio = i % 9 === 0 ? `${i}e-3` : `${i / 8}`;
      const label = i % 4 === 0 ? `"label ${i}, ""quoted"" é 😀"` : `label ${i}`;
      let row = `2026-03-${d}${i % 2 ? 'T' : ' '}10:${String(i % 60).padStart(2, '0')}${i % 3 ? '' : '+02'},${id},${amount},${ratio},${label},${flags[i % 8]},2026-03-${d}`;
      if (i === 7) row = `2026-03-01,7,-0.00,-0,"multi\nline ""label""",yes,2026-03-01`;
      if (i === 15_000) row = `2026-03-01,x15000,1,1,bad id,true,2026-03-01`; // a reject in a middle chunk
      if (i === 31_000) row = `NA,31000,,NULL,,N/A,`; // null tokens: the validating path's rules
      s += row + '\n';
    }
    return s;
  }

  beforeAll(async () => {
    await sink.start();
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    for (const run of runs) {
      const flags = {
        TAPYARD_ENV: run.env,
        UPLOAD_LIMIT: '16mb',
        CSV_FAST_PATH: String(run.fast),
        REST_SINK_ALLOW: `127.0.0.1:${sink.port}`,
        LOAD_RETRY_ATTEMPTS: '1',
      };
      run.api = await startApi(flags);
      run.worker = await startWorker(flags);
      await run.api.http
        .post('/api/v1/pipeline')
        .send({
          name: 'jf',
          source: {
            fileAttributes: { format: 'csv' },
            schemaProperties: {
              fields: [
                { name: 'id', type: 'bigint' },
                { name: 'amount', type: 'decimal', precision: 12, scale: 2 },
                { name: 'ratio', type: 'double' },
                { name: 'label', type: 'string' },
                { name: 'flag', type: 'boolean' },
                { name: 'day', type: 'date' },
                { name: 'at', type: 'timestamp' },
                { name: 'absent', type: 'int' },
              ],
            },
          },
          destination: {
            rest: { url: `http://127.0.0.1:${sink.port}/${run.name}`, batchSize: 5000, format: 'ndjson' },
          },
        })
        .expect(200);
    }
  }, 240_000);
  afterAll(async () => {
    for (const run of runs) {
      await run.worker?.close();
      await run.api?.close();
    }
    await pg.end();
    await sink.stop();
  });

  it('sends the same JSON rows, keeps the same rejects, and says which path it took', async () => {
    const csv = file();
    const results = [];
    for (const run of runs) {
      const api = run.api as TestApi;
      // The receiver refuses the fourth batch for good: its rows become rejects at their lines.
      sink.failBatch(3, { status: 422, body: 'no' });
      const token = await upload(api.http, 'jf', csv, 'rows.csv');
      const { rollup, events } = await waitForJob(api.http, token, 90_000);
      expect(rollup.status).toBe('warning');
      const end = events.find((e) => e.processName === 'DataQuality' && e.state === 'end')?.description ?? '';
      const unparsed = Number(/(\d+) of them went to the destination unparsed/.exec(end)?.[1] ?? 0);
      // Clean records go the fast way up to the reject, then 1 MiB chunks; the one with the null tokens is parsed.
      if (run.fast) expect(unparsed).toBeGreaterThan(10_000);
      else expect(unparsed).toBe(0);
      const rejects = await pg.query(
        'SELECT line, stage, reason, raw FROM tapyard.sink_rejects WHERE environment = $1 AND pipeline = $2 ORDER BY line',
        [run.env, 'jf'],
      );
      // The receiver's path differs by run, and the refusals name it.
      const reasons = rejects.rows.map((r: { line: number; stage: string; reason: string; raw: string }) => ({
        ...r,
        reason: r.reason.replace(`/${run.name}:`, '/<path>:'),
      }));
      results.push({ rows: [...sink.texts(`/${run.name}`)].sort(), rejects: reasons });
    }
    const [fast, reference] = results;
    expect(fast.rows.length).toBe(reference.rows.length);
    expect(fast.rows).toEqual(reference.rows);
    expect(fast.rejects).toEqual(reference.rejects);
    // And what they agree on is right: 40,000 rows less the bad id and the refused batch of 5,000
    // (ids 15,002 to 20,001: the bad id came before them), whose lines follow the multi-line label
    // on lines 8 and 9 (id + 2 from there).
    expect(reference.rows.length).toBe(34_999);
    const refused = reference.rejects.filter((r: { stage: string }) => r.stage === 'RestEndpointRunner');
    expect(refused.map((r: { line: number }) => Number(r.line))).toEqual(
      Array.from({ length: 5000 }, (_, k) => 15_004 + k),
    );
    const byId = new Map(reference.rows.map((t: string) => [/"id":(-?\d+)/.exec(t)?.[1], t]));
    expect(byId.get('7')).toBe(
      '{"id":7,"amount":"0.00","ratio":0,"label":"multi\\nline \\"label\\"","flag":true,"day":"2026-03-01","at":"2026-03-01T00:00Z","absent":null}',
    );
    expect(byId.get('31000')).toBe(
      '{"id":31000,"amount":null,"ratio":null,"label":null,"flag":null,"day":null,"at":null,"absent":null}',
    );
    // Beyond 2^53: every digit, as a number.
    expect(byId.get('9007199255259974')).toMatch(/^\{"id":9007199255259974,"amount":/);
  });
});
