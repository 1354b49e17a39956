import { TestApi, startApi } from './support/apps';
import { uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';

/**
 * AI advice next to the deterministic /pipeline/generate and /pipeline/profile: types stay the
 * authority, suggested rules pass the pipeline rule schema, sensitive columns' values stay home.
 */
describe('AI advice in pipeline generate and profile (model double)', () => {
  const double = new ModelDouble();
  let api: TestApi;
  const csv =
    'id,customer_email,price,country\n' +
    '1,ann@example.com,9.50,DE\n2,bob@example.com,12.00,FR\n3,cy@example.com,7.25,DE\n4,dee@example.com,3.10,IT\n';
  const generate = () =>
    api.http.post('/api/v1/pipeline/generate').attach('file', Buffer.from(csv), 'orders.csv');
  const profile = () =>
    api.http.post('/api/v1/pipeline/profile').attach('file', Buffer.from(csv), 'orders.csv');

  beforeAll(async () => {
    await double.start();
    api = await startApi({ TAPYARD_ENV: uniqueEnvironment('advice'), TAP_EGRESS_ALLOW: double.address });
  });
  afterAll(async () => {
    await api.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  it('adds field descriptions and hints; types are exactly those of the deterministic inference', async () => {
    const plain = (await generate().expect(200)).body;
    expect(plain.advice).toBeUndefined();
    await api.http
      .put('/api/v1/secrets/ai')
      .send({
        provider: 'openai-compatible',
        baseUrl: double.openaiUrl,
        model: 'm',
        'model.advice': 'advisor',
      })
      .expect(200);

    double.script({
      json: {
        fields: [
          { name: 'customer_email', description: 'The buyer’s e-mail address.', hint: 'email' },
          { name: 'price', description: 'Unit price.', hint: 'currency amount' },
          { name: 'ghost', description: 'Not a column.', hint: null },
        ],
      },
    });
    const res = await generate().expect(200);
    const { advice, ...proposal } = res.body;
    expect(proposal).toEqual(plain);
    expect(advice).toEqual({
      model: 'advisor',
      fields: [
        { name: 'customer_email', description: 'The buyer’s e-mail address.', hint: 'email' },
        { name: 'price', description: 'Unit price.', hint: 'currency amount' },
      ],
    });
    const prompt = ModelDouble.promptText(double.calls[0]);
    expect(prompt).toContain('price (decimal): "9.50", "12.00", "7.25"');
    expect(prompt).toContain('customer_email (string)');
    expect(prompt).not.toContain('@example.com');
  });

  it('adds recommendations and rules, keeping only rules the pipeline rule schema accepts', async () => {
    const plain = (
      await (async () => {
        double.script({ status: 400, message: 'bad request' });
        return profile().expect(200);
      })()
    ).body;
    expect(plain.advice).toEqual({ error: expect.stringContaining('HTTP 400') });

    double.script({
      json: {
        recommendations: ['Prices look like EUR: store the currency too.'],
        rules: [
          { type: 'range', column: 'price', min: 0 },
          { type: 'allowed_values', column: 'country', values: ['DE', 'FR', 'IT'] },
          { type: 'range', column: 'country', min: 1 },
          { type: 'regex', column: 'country', pattern: '(' },
          { type: 'not_null', column: 'nope' },
          { type: 'drop_table', column: 'price' },
        ],
      },
    });
    const res = await profile().expect(200);
    const { advice, ...deterministic } = res.body;
    const { advice: _ignored, ...plainDeterministic } = plain;
    expect(deterministic).toEqual(plainDeterministic);
    expect(advice.recommendations).toEqual(['Prices look like EUR: store the currency too.']);
    expect(advice.suggestedRules).toEqual([
      { type: 'range', column: 'price', min: 0 },
      { type: 'allowed_values', column: 'country', values: ['DE', 'FR', 'IT'] },
    ]);
    expect(advice.refusedRules.map((r: { reason: string }) => r.reason)).toEqual([
      expect.stringContaining('range applies to numbers, dates and timestamps, not string'),
      expect.stringContaining('is not a valid regular expression'),
      expect.stringContaining("column 'nope' is not in the schema"),
      expect.stringContaining('type must be one of'),
    ]);
    expect(ModelDouble.promptText(double.calls[0])).not.toContain('@example.com');
  });
});
