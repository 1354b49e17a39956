import { TestApi, startApi } from './support/apps';

/** POST /pipeline/generate and /pipeline/profile through the real multipart routes. */
describe('pipeline generate and profile', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  const generate = (content: string, filename: string, fields: Record<string, string> = {}) => {
    let req = api.http.post('/api/v1/pipeline/generate');
    for (const [k, v] of Object.entries(fields)) req = req.field(k, v);
    return req.attach('file', Buffer.from(content), filename);
  };

  it('infers the types (decimal and double, never float), keeps leading zeros and normalises names', async () => {
    const csv =
      'ID,Zip Code,Amount %,Small,Big,Ratio,Day,At,Flag,Notes,notes\n' +
      '1,00501,12.5,7,3000000000,0.123456789,2026-01-02,2026-01-02T10:00:00Z,true,hello,a\n' +
      '2,02134,-3,8,-3000000000,1.5,2026-02-28,2026-02-28 23:59:59,false,,b\n';
    const res = await generate(csv, 'Daily Sales.csv').expect(200);
    expect(res.body).toEqual({
      name: 'daily_sales',
      source: {
        fileAttributes: {
          format: 'csv',
          csvAttributes: { delimiter: ',', header: true, quote: '"', escape: '"', encoding: 'utf-8' },
        },
        schemaProperties: {
          fields: [
            { name: 'id', type: 'int' },
            { name: 'zip_code', type: 'string' },
            { name: 'amount_percent', type: 'double' },
            { name: 'small', type: 'int' },
            { name: 'big', type: 'bigint' },
            { name: 'ratio', type: 'double' },
            { name: 'day', type: 'date' },
            { name: 'at', type: 'timestamp' },
            { name: 'flag', type: 'boolean' },
            { name: 'notes', type: 'string' },
            { name: 'notes_2', type: 'string' },
          ],
        },
      },
      destination: {
        database: { dbName: 'tapyard_test', schema: 'public', table: 'daily_sales', usePostgres: true },
      },
    });
    // The proposal registers as is.
    await api.http.post('/api/v1/pipeline').send(res.body).expect(200);
  });

  it('one bad value among the sample: the majority type, the outliers counted in typeNotes', async () => {
    const lines = ['qty,price'];
    for (let i = 1; i <= 100; i++)
      lines.push(`${i === 50 ? 'twelve' : i},${i}.${String(i % 100).padStart(2, '0')}`);
    const res = await generate(lines.join('\n') + '\n', 'lines.csv').expect(200);
    expect(res.body.source.schemaProperties.fields).toEqual([
      { name: 'qty', type: 'int' },
      { name: 'price', type: 'decimal', precision: 18, scale: 2 },
    ]);
    expect(res.body.typeNotes).toEqual([
      {
        column: 'qty',
        type: 'int',
        reason:
          "1 of 100 sampled values are not numbers (e.g. 'twelve'): proposed int for the others; rows with such " +
          'values would be rejected at load, with the reason. Use string to keep them as text.',
        outliers: 1,
        examples: ['twelve'],
      },
      expect.objectContaining({ column: 'price', type: 'decimal', outliers: 0 }),
    ]);
    // The proposal, its notes included, registers as is.
    await api.http.post('/api/v1/pipeline').send(res.body).expect(200);
  });

  it('honours pipeline, delimiter, header and allStrings', async () => {
    const tsv = 'a\tb\n1\t2\n';
    const res = await generate(tsv, 'x.tsv', { pipeline: 'mine', allStrings: 'true' }).expect(200);
    expect(res.body.name).toBe('mine');
    expect(res.body.source.fileAttributes.csvAttributes.delimiter).toBe('\t');
    expect(res.body.source.schemaProperties.fields).toEqual([
      { name: 'a', type: 'string' },
      { name: 'b', type: 'string' },
    ]);
    const semi = await generate('1;2\n3;4\n', 'nums.csv', { delimiter: ';' }).expect(200);
    expect(semi.body.source.fileAttributes.csvAttributes.header).toBe(false);
    expect(semi.body.source.schemaProperties.fields).toEqual([
      { name: 'column_1', type: 'int' },
      { name: 'column_2', type: 'int' },
    ]);
    const forced = await generate('1;2\n3;4\n', 'nums.csv', { delimiter: ';', header: 'true' }).expect(200);
    expect(forced.body.source.schemaProperties.fields.map((f: { name: string }) => f.name)).toEqual([
      '1',
      '2',
    ]);
  });

  it('proposes a single _json or _xml field for JSON and XML', async () => {
    const json = await generate('[{"a":1},{"a":2}]', 'events.json').expect(200);
    expect(json.body.source).toEqual({
      fileAttributes: { format: 'json' },
      schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
    });
    const xml = await generate('<orders><order id="1"/><order id="2"/></orders>', 'orders.xml').expect(200);
    expect(xml.body.source).toEqual({
      fileAttributes: { format: 'xml', xmlAttributes: { rowElement: 'order' } },
      schemaProperties: { fields: [{ name: '_xml', type: 'string' }] },
    });
    const doctype = await generate('<!DOCTYPE x [<!ENTITY a "b">]><x/>', 'evil.xml').expect(400);
    expect(doctype.body.message).toMatch(/DOCTYPE/);
    await generate('"scalar"', 'bad.json').expect(400);
    await api.http.post('/api/v1/pipeline/generate').field('pipeline', 'x').expect(400);
  });

  it('profiles a sample with statistics, issues, recommendations and rules', async () => {
    const rows = ['id,country,amount,zip'];
    for (let i = 1; i <= 300; i++)
      rows.push(
        `${i},${i % 3 === 0 ? 'FR' : 'DE'},${i === 300 ? 1000000 : i % 10},${String(i).padStart(5, '0')}`,
      );
    const res = await api.http
      .post('/api/v1/pipeline/profile')
      .attach('file', Buffer.from(rows.join('\n') + '\n'), 'p.csv')
      .expect(200);
    expect(res.body.sampleSize).toBe(200);
    expect(res.body.rowCount).toBe(200);
    const byName = Object.fromEntries(res.body.columns.map((c: { name: string }) => [c.name, c]));
    expect(byName.id).toMatchObject({
      inferredType: 'int',
      nullRate: 0,
      distinctCount: 200,
      min: 1,
      max: 200,
    });
    expect(byName.zip.inferredType).toBe('string');
    expect(byName.country.topValues[0]).toEqual({ value: 'DE', count: 134 });
    expect(res.body.suggestedRules).toEqual(
      expect.arrayContaining([
        { type: 'not_null', column: 'id' },
        { type: 'unique', column: 'id' },
        { type: 'allowed_values', column: 'country', values: ['DE', 'FR'] },
      ]),
    );
    // 200 rows of 300: no range is proposed from a head (`range 1..200` would reject the rest).
    expect(res.body.suggestedRules.filter((r: { type: string }) => r.type === 'range')).toEqual([]);
    expect(res.body.recommendations.length).toBeGreaterThan(0);

    const all = await api.http
      .post('/api/v1/pipeline/profile')
      .field('sampleSize', '300')
      .attach('file', Buffer.from(rows.join('\n') + '\n'), 'p.csv')
      .expect(200);
    expect(all.body.rowCount).toBe(300);
    // The whole file: ranges, but never for the id (id-like and monotonic).
    expect(all.body.suggestedRules.filter((r: { type: string }) => r.type === 'range')).toEqual([
      { type: 'range', column: 'amount', min: 0, max: 1000000 },
    ]);
    expect(
      all.body.issues.some(
        (i: { kind: string; column: string }) => i.kind === 'outliers' && i.column === 'amount',
      ),
    ).toBe(true);
    await api.http
      .post('/api/v1/pipeline/profile')
      .field('sampleSize', '0')
      .attach('file', Buffer.from('a\n1\n'), 'p.csv')
      .expect(400);
  });
});
