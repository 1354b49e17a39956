import { Pool } from 'pg';
import { TestApi } from './support/apps';
import { chat } from './support/assistant-chat';
import { newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';
import { keyed } from './support/ingest';
import { ModelDouble } from './support/model-double';
import { CATALOG_A, ScopedPlatform, startScopedPlatform } from './support/scoped-platform';

/**
 * API audit, finding 1: a catalog-scoped key could save a pipeline of its catalog whose destination is
 * a table or collection another catalog's pipeline loads into, then replace (delete), merge over or add
 * to that catalog's rows. A save now needs pipeline:update over every pipeline already loading there
 * (through the route and the assistant's register_pipeline alike), and a definition stored before that
 * check loads beside no pipeline of another scope until it is saved again by someone who may. API keys
 * on; real API and worker, PostgreSQL, FerretDB (MongoDB wire), MinIO; the model is the loopback double.
 */
describe('a table or collection another scope loads into', () => {
  const env = uniqueEnvironment('locations');
  const schema = `loc_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const mongoDb = schema;
  const admin = newBootstrapKey();
  const double = new ModelDouble();
  let api: TestApi;
  let platform: ScopedPlatform;
  let pg: Pool;
  let base: string;
  /** The audit's catalog-scoped key, able to watch its jobs and talk to the assistant. */
  let keyA: string;
  let pgDatabase: string;

  const csvPipeline = (name: string, catalog: string, destination: Record<string, unknown>) => ({
    name,
    catalog,
    source: { fileAttributes: { format: 'csv' }, schemaProperties: { fields: [{ name: 'n', type: 'int' }] } },
    destination,
  });
  const jsonPipeline = (name: string, catalog: string, collection: string) => ({
    name,
    catalog,
    source: {
      fileAttributes: { format: 'json' },
      schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
    },
    destination: { database: { usePostgres: false, dbName: mongoDb, table: collection } },
  });
  const table = (name: string) => ({ database: { schema, table: name } });
  const refusal = (where: string) =>
    `'team-a' lacks the capability pipeline:update for ${where}: a pipeline outside its scope loads there`;

  const { post, get, load } = keyed(() => api.http);
  /** A pipeline's recorded places, its version, and whether they were read from that version. */
  const places = async (name: string) =>
    (
      await pg.query(
        `SELECT locations, version, locations_version = version AS fresh
           FROM tapyard.pipelines WHERE environment = $1 AND name = $2`,
        [env, name],
      )
    ).rows[0] as { locations: string[]; version: number; fresh: boolean };
  const rows = async (name: string) =>
    (await pg.query(`SELECT n FROM "${schema}"."${name}" ORDER BY n`)).rows.map((r: { n: number }) => r.n);

  beforeAll(async () => {
    await double.start();
    platform = await startScopedPlatform({
      env,
      admin,
      schema,
      mongoDb,
      flags: { TAP_EGRESS_ALLOW: double.address },
      keyCapabilities: [...CATALOG_A, 'assistant:run'],
    });
    ({ api, base, pg, pgDatabase, keyA } = platform);
    await double.useAs(api.http, admin);
    // Catalog b's pipelines, named apart from their places so a message naming one is seen.
    await post(admin, '/pipeline', csvPipeline('b-salaries', 'b', table('payroll'))).expect(200);
    await post(admin, '/pipeline', jsonPipeline('b-people', 'b', 'people')).expect(200);
  }, 90_000);

  afterAll(async () => {
    await platform.stop();
    await double.stop();
  });

  beforeEach(() => double.reset());

  describe('saving', () => {
    it.each([
      ['replace', {}],
      ['merge', { primaryKey: ['n'] }],
      ['append', {}],
    ])(
      "refuses a catalog-a key catalog b's PostgreSQL table (writeMode %s), naming the table, not its pipeline",
      async (writeMode, options) => {
        const res = await post(
          keyA,
          '/pipeline',
          csvPipeline('a-wipe', 'a', { ...table('payroll'), writeMode, ...options }),
        );
        expect({ status: res.status, code: res.body.code, message: res.body.message }).toEqual({
          status: 403,
          code: 'auth.capability_missing',
          message: refusal(`PostgreSQL table ${pgDatabase}.${schema}.payroll`),
        });
        expect(JSON.stringify(res.body)).not.toContain('b-salaries');
        await get(admin, '/pipeline', { pipeline: 'a-wipe' }).expect(404);
      },
    );

    it("refuses it catalog b's MongoDB collection", async () => {
      const res = await post(keyA, '/pipeline', jsonPipeline('a-people', 'a', 'people'));
      expect({ status: res.status, code: res.body.code, message: res.body.message }).toEqual({
        status: 403,
        code: 'auth.capability_missing',
        message: refusal(`MongoDB collection ${mongoDb}.people`),
      });
      expect(JSON.stringify(res.body)).not.toContain('b-people');
      await get(admin, '/pipeline', { pipeline: 'a-people' }).expect(404);
    });

    it("refuses it through the assistant's register_pipeline, before its user is asked", async () => {
      double.script(
        {
          toolCalls: [
            {
              name: 'register_pipeline',
              arguments: {
                config: csvPipeline('a-wipe', 'a', { ...table('payroll'), writeMode: 'replace' }),
              },
            },
          ],
        },
        { text: 'done' },
      );
      const events = await chat(base, keyA, { messages: [{ content: 'please register it' }] });
      expect(events.map((e) => e.event)).not.toContain('pending_action');
      const result = events.find((e) => e.event === 'tool_result')?.data;
      expect(result?.error).toBe(`403: ${refusal(`PostgreSQL table ${pgDatabase}.${schema}.payroll`)}`);
      expect(JSON.stringify(events)).not.toContain('b-salaries');
      await get(admin, '/pipeline', { pipeline: 'a-wipe' }).expect(404);
    });

    it('lets it save into fresh places and into a table its own catalog loads into, and load there', async () => {
      await post(keyA, '/pipeline', csvPipeline('a-first', 'a', table('a_rows'))).expect(200);
      await post(keyA, '/pipeline', csvPipeline('a-second', 'a', table('a_rows'))).expect(200);
      await post(keyA, '/pipeline', jsonPipeline('a-docs', 'a', 'a_docs')).expect(200);
      await post(keyA, '/pipeline', jsonPipeline('a-docs-too', 'a', 'a_docs')).expect(200);
      expect((await load(keyA, 'a-first', 'n\n1\n')).status).toBe('success');
      expect((await load(keyA, 'a-second', 'n\n2\n')).status).toBe('success');
      expect(await rows('a_rows')).toEqual([1, 2]);
    });

    it('lets an admin save into either, and then a catalog-a key may not change what it saved', async () => {
      const shared = csvPipeline('admin-share', 'a', table('payroll'));
      await post(admin, '/pipeline', shared).expect(200);
      await post(admin, '/pipeline', jsonPipeline('admin-people', 'a', 'people')).expect(200);
      await post(admin, '/pipeline', csvPipeline('admin-fresh', 'a', table('admin_rows'))).expect(200);
      // Catalog a's own pipeline, but it loads beside catalog b's.
      const res = await post(keyA, '/pipeline', { ...shared, description: 'changed' });
      expect(res.status).toBe(403);
      expect(res.body.message).toBe(refusal(`PostgreSQL table ${pgDatabase}.${schema}.payroll`));
      await post(admin, '/pipeline', { ...shared, description: 'changed' }).expect(200);
      // Saving (and changing) it again is the admin's to do, as before.
      await post(admin, '/pipeline', { ...shared, description: 'changed again' }).expect(200);
    });

    it('records where each pipeline loads, for the version it read them from', async () => {
      await post(keyA, '/pipeline', csvPipeline('a-recorded', 'a', table('recorded_rows'))).expect(200);
      await post(keyA, '/pipeline', {
        ...csvPipeline('a-recorded', 'a', table('recorded_rows')),
        description: 'v2',
      }).expect(200);
      expect(await places('a-recorded')).toEqual({
        locations: [`PostgreSQL table ${pgDatabase}.${schema}.recorded_rows`],
        version: 2,
        fresh: true,
      });
    });

    it('finds a pipeline that a release recording no places moved there, and records its places', async () => {
      await post(admin, '/pipeline', csvPipeline('b-moved', 'b', table('b_before'))).expect(200);
      // A release before this one, during a rolling upgrade: a new definition and version, the places left.
      await pg.query(
        `UPDATE tapyard.pipelines
            SET definition = jsonb_set(definition, '{destination,database,table}', '"b_after"'),
                version = version + 1
          WHERE environment = $1 AND name = 'b-moved'`,
        [env],
      );
      expect((await places('b-moved')).fresh).toBe(false);
      const res = await post(keyA, '/pipeline', csvPipeline('a-after', 'a', table('b_after')));
      expect(res.status).toBe(403);
      expect(res.body.message).toBe(refusal(`PostgreSQL table ${pgDatabase}.${schema}.b_after`));
      // The refused save's transaction recorded nothing; the next save that reads it does.
      await post(keyA, '/pipeline', csvPipeline('a-elsewhere', 'a', table('a_elsewhere'))).expect(200);
      expect(await places('b-moved')).toEqual({
        locations: [`PostgreSQL table ${pgDatabase}.${schema}.b_after`],
        version: 2,
        fresh: true,
      });
      expect((await post(keyA, '/pipeline', csvPipeline('a-after', 'a', table('b_after')))).status).toBe(403);
    });
  });

  describe('loading a definition stored before saves were checked', () => {
    /** As an older release would have stored it: pointed at `place`, never checked. */
    async function storedBefore(name: string, place: string): Promise<void> {
      await pg.query(
        `UPDATE tapyard.pipelines
            SET definition = jsonb_set(definition, '{destination,database,table}', to_jsonb($3::text)),
                locations_checked = false, locations = NULL, locations_version = NULL
          WHERE environment = $1 AND name = $2`,
        [env, name, place],
      );
    }

    it('loads nothing beside another scope, until someone allowed to saves it again', async () => {
      expect((await load(admin, 'b-salaries', 'n\n1\n2\n')).status).toBe('success');
      const old = csvPipeline('old-wipe', 'a', { ...table('old_rows'), writeMode: 'replace' });
      await post(keyA, '/pipeline', old).expect(200);
      await storedBefore('old-wipe', 'payroll');

      const job = await load(keyA, 'old-wipe', 'n\n9\n');
      expect(job.status).toBe('error');
      expect(job.lastError).toEqual({
        processName: 'JobRunner',
        description:
          `pipeline 'old-wipe' may not load into PostgreSQL table ${pgDatabase}.${schema}.payroll: a pipeline ` +
          "of another scope loads there, and 'old-wipe' was saved before saves checked that; save it again " +
          'with pipeline:update over both to load',
      });
      expect(JSON.stringify(job)).not.toContain('b-salaries');
      expect(await rows('payroll')).toEqual([1, 2]);

      // Its own key cannot clear it: that save is checked, and refused.
      const stored = { ...old, destination: { ...table('payroll'), writeMode: 'replace' } };
      const again = await post(keyA, '/pipeline', stored);
      expect(again.status).toBe(403);
      expect(again.body.message).toBe(refusal(`PostgreSQL table ${pgDatabase}.${schema}.payroll`));
      expect((await load(keyA, 'old-wipe', 'n\n9\n')).status).toBe('error');

      // An admin saving it unchanged clears it (no new version): the sharing is then the admin's.
      const version = (await get(admin, '/pipeline', { pipeline: 'old-wipe' }).expect(200)).body.version;
      const cleared = await post(admin, '/pipeline', stored).expect(200);
      expect(cleared.body.version).toBe(version);
      expect((await load(keyA, 'old-wipe', 'n\n9\n')).status).toBe('success');
      expect(await rows('payroll')).toEqual([9]);
    });

    it('still loads beside pipelines of its own scope', async () => {
      await post(keyA, '/pipeline', csvPipeline('old-own', 'a', table('own_rows'))).expect(200);
      await post(keyA, '/pipeline', csvPipeline('old-own-too', 'a', table('own_rows'))).expect(200);
      await storedBefore('old-own', 'own_rows');
      expect((await load(keyA, 'old-own', 'n\n3\n')).status).toBe('success');
      expect(await rows('own_rows')).toEqual([3]);
    });
  });
});
