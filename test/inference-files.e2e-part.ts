import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { upload, waitForJob } from './support/ingest';

/** Issue 27 item 7 (files): delimiters sniffed, and JSON records found under a wrapping object. */
describe('file inference: delimiters and JSON record arrays', () => {
  const env = uniqueEnvironment('infer');
  const table = (name: string) => `${name}_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  const generate = (content: string, filename: string) =>
    api.http.post('/api/v1/pipeline/generate').attach('file', Buffer.from(content), filename).expect(200);

  // A European export, as spreadsheets in de-DE or fr-FR save "CSV": semicolons, decimal commas.
  const european =
    'Bestellnummer;Artikel;Menge;Preis\n' +
    '1001;Füller;2;12,50\n' +
    '1002;Tinte, blau;10;3,99\n' +
    '1003;Heft;5;0,89\n';

  it('generate detects semicolon- and tab-delimited files; decimal commas stay text', async () => {
    const semi = await generate(european, 'bestellungen.csv');
    expect(semi.body.source.fileAttributes.csvAttributes).toMatchObject({ delimiter: ';', header: true });
    expect(semi.body.source.schemaProperties.fields).toEqual([
      { name: 'bestellnummer', type: 'int' },
      { name: 'artikel', type: 'string' },
      { name: 'menge', type: 'int' },
      // `12,50` is not read as a number: the loader would have to guess the locale of every value.
      { name: 'preis', type: 'string' },
    ]);
    const tab = await generate('id\tcity\tpop\n1\tLyon, FR\t522250\n2\tGent, BE\t265086\n', 'cities.txt');
    expect(tab.body.source.fileAttributes.csvAttributes.delimiter).toBe('\t');
    expect(tab.body.source.schemaProperties.fields.map((f: { name: string }) => f.name)).toEqual([
      'id',
      'city',
      'pop',
    ]);
  });

  it('profile reads a semicolon file as its columns', async () => {
    const res = await api.http
      .post('/api/v1/pipeline/profile')
      .attach('file', Buffer.from(european), 'bestellungen.csv')
      .expect(200);
    expect(res.body.columns.map((c: { name: string }) => c.name)).toEqual([
      'bestellnummer',
      'artikel',
      'menge',
      'preis',
    ]);
    expect(res.body.rowCount).toBe(3);
  });

  it('a semicolon file generated from loads every row and column', async () => {
    const proposal = (await generate(european, 'bestellungen.csv')).body;
    proposal.destination.database = {
      ...proposal.destination.database,
      schema: 'ingest_test',
      table: table('semi'),
    };
    await api.http.post('/api/v1/pipeline').send(proposal).expect(200);
    const token = await upload(api.http, proposal.name, european, 'bestellungen.csv');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
    const rows = await pg.query(
      `SELECT artikel, preis FROM ingest_test."${table('semi')}" ORDER BY bestellnummer`,
    );
    expect(rows.rows).toEqual([
      { artikel: 'Füller', preis: '12,50' },
      { artikel: 'Tinte, blau', preis: '3,99' },
      { artikel: 'Heft', preis: '0,89' },
    ]);
  });

  it('generate finds records nested under data.items, and the upload loads one row per item', async () => {
    const doc = JSON.stringify({
      meta: { page: 1, links: [{ rel: 'next', href: '/p/2' }] },
      data: {
        total: 3,
        items: [
          { id: 1, sku: 'A' },
          { id: 2, sku: 'B' },
          { id: 3, sku: 'C' },
        ],
      },
    });
    const proposal = (await generate(doc, 'orders-page.json')).body;
    expect(proposal.source).toEqual({
      fileAttributes: { format: 'json', jsonAttributes: { recordPath: 'data.items' } },
      schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
    });
    proposal.destination.database = {
      ...proposal.destination.database,
      schema: 'ingest_test',
      table: table('items'),
    };
    await api.http.post('/api/v1/pipeline').send(proposal).expect(200);
    const token = await upload(api.http, proposal.name, doc, 'orders-page.json');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
    const rows = await pg.query(`SELECT _json FROM ingest_test."${table('items')}"`);
    expect(
      rows.rows.map((r: { _json: unknown }) => (typeof r._json === 'string' ? JSON.parse(r._json) : r._json)),
    ).toEqual(
      expect.arrayContaining([
        { id: 1, sku: 'A' },
        { id: 2, sku: 'B' },
        { id: 3, sku: 'C' },
      ]),
    );
    expect(rows.rows).toHaveLength(3);
    // A plain array still needs no path.
    expect((await generate('[{"a":1}]', 'flat.json')).body.source.fileAttributes).toEqual({ format: 'json' });
  });

  it('an upload of a semicolon file into a comma pipeline is refused naming the delimiter the file uses', async () => {
    const proposal = (await generate(european, 'bestellungen.csv')).body;
    proposal.name = 'comma_orders';
    proposal.source.fileAttributes.csvAttributes.delimiter = ',';
    proposal.destination.database = {
      ...proposal.destination.database,
      schema: 'ingest_test',
      table: table('comma'),
    };
    await api.http.post('/api/v1/pipeline').send(proposal).expect(200);
    const token = await upload(api.http, 'comma_orders', european, 'bestellungen.csv');
    const { rollup } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError?.description).toMatch(
      /check the delimiter \(','\) and header settings, and that this is the right file; the file looks ';'-delimited$/,
    );
  });
});
