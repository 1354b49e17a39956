import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Pool } from 'pg';
import { Browser, Page } from 'playwright-core';
import { TestWorker, startWorker } from './support/apps';
import {
  Served,
  consoleDescribe,
  logIn,
  newPage as openPage,
  openBrowser,
  serve,
  shot,
} from './support/console-browser';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { ModelDouble } from './support/model-double';
import { until } from './support/wait';
import { dropPgvectorTable, vectorPeerFields } from './support/vector-peers';

const DQ_V1 = `def check(rows):
    return [("amount is negative" if r["amount"] is not None and r["amount"] < 0 else None) for r in rows]
`;
const DQ_STRICT = `def check(rows):
    return [("amount below 100" if r["amount"] is None or r["amount"] < 100 else None) for r in rows]
`;

const LEAVE = `# Annual leave

Every employee gets twenty-five days of paid vacation each year, and may carry five days over.
`;
const CANTEEN = `# Canteen

The canteen serves lunch from noon to two o'clock; vegetarian dishes every day.
`;

/**
 * The console's data pages in a real browser against the real API serving the built console, a real
 * worker, PostgreSQL, pgvector, MinIO and the sandbox; the model is the loopback double. The console logs
 * in (USE_USER_AUTH=true); the test's own setup calls the API as a program (anonymous in that mode).
 */
consoleDescribe('test/console-data.e2e-spec.ts')(
  'the console: documents, query, assistant, incidents',
  () => {
    const env = uniqueEnvironment('console-data');
    const suffix = env.replace(/[^a-z0-9]/g, '').slice(-8);
    const collection = `kb_${suffix}`;
    const schema = `cq_${suffix}`;
    const password = 'console-data-admin-password';
    const double = new ModelDouble();
    let browser: Browser;
    let served: Served;
    let worker: TestWorker;
    let pg: Pool;

    const newPage = async (path: string, user = 'admin', pass = password): Promise<Page> => {
      const page = await openPage(browser, `${served.url}${path}`);
      await logIn(page, user, pass);
      return page;
    };
    const http = () => served.api.http;

    beforeAll(async () => {
      await double.start();
      const flags = {
        TAPYARD_ENV: env,
        ...TEST_OBJECT_STORE,
        USE_USER_AUTH: 'true',
        TAPYARD_ADMIN_PASSWORD: password,
        TAP_EGRESS_ALLOW: double.address,
        PGVECTOR_URL: vectorPeerFields('pgvector').connectionString,
      };
      [browser, served, worker] = await Promise.all([openBrowser(), serve(flags), startWorker(flags)]);
      await http()
        .put('/api/v1/secrets/ai')
        .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'm' })
        .expect(200);
      await http()
        .post('/api/v1/users')
        .send({ username: 'vera', password: 'a-viewer-passphrase', role: 'viewer' })
        .expect(201);
      pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
      await pg.query(`CREATE SCHEMA "${schema}"`);
      await pg.query(
        `CREATE TABLE "${schema}".sales (id int PRIMARY KEY, region text, amount numeric(10,2))`,
      );
      await pg.query(
        `INSERT INTO "${schema}".sales SELECT i, (ARRAY['north','south','east'])[1 + i % 3], i * 1.5 FROM generate_series(1, 30) i`,
      );
    }, 120_000);
    afterAll(async () => {
      await pg?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await dropPgvectorTable(collection).catch(() => undefined);
      await pg?.end();
      await browser?.close();
      await worker?.close();
      await served?.api.close();
      await double.stop();
    });
    beforeEach(() => double.reset());

    it('uploads a document with progress and its job status, then searches it with scores and a metadata filter', async () => {
      await http()
        .post('/api/v1/pipeline')
        .send({
          name: 'handbook',
          source: { fileAttributes: { unstructuredAttributes: {} }, schemaProperties: { fields: [] } },
          destination: { vectorStore: { store: 'pgvector', collection } },
        })
        .expect(200);
      await waitForJob(http(), await upload(http(), 'handbook', CANTEEN, 'canteen.md'));

      const page = await newPage('/documents');
      await page.getByRole('heading', { name: 'Load a file into handbook' }).waitFor();
      await page.getByLabel('File', { exact: true }).setInputFiles({
        name: 'leave.md',
        mimeType: 'text/markdown',
        buffer: Buffer.from(LEAVE),
      });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.getByTestId('upload-bytes').filter({ hasText: '(100%)' }).waitFor();
      await page.getByText('(done)').waitFor({ timeout: 60_000 });
      await page.locator('.stage', { hasText: 'VectorStoreLoader' }).waitFor();

      // The playground starts on the pipeline's own store and table.
      await page.waitForFunction(
        `[...document.querySelectorAll('input')].some((i) => i.value === ${JSON.stringify(collection)})`,
      );
      await expect(page.getByLabel('Table', { exact: true }).inputValue()).resolves.toBe(collection);
      await page.getByLabel('Question', { exact: true }).fill('How many vacation days do I get each year?');
      await page.getByRole('button', { name: 'Search' }).click();
      const first = page.getByRole('list', { name: 'Search results' }).locator('li').first();
      await first.waitFor();
      expect(await first.textContent()).toContain('leave.md');
      const score = Number((await first.getByTestId('score').textContent())?.replace('score ', ''));
      expect(score).toBeGreaterThan(0.5);
      expect(score).toBeLessThanOrEqual(1);

      // Filtered to the other document, the same question finds only it.
      await page.getByLabel('Filter key 1').fill('filename');
      await page.getByLabel('Filter value 1').fill('canteen.md');
      await page.getByRole('button', { name: 'Search' }).click();
      await page
        .getByRole('list', { name: 'Search results' })
        .locator('li')
        .first()
        .filter({ hasText: 'canteen.md' })
        .waitFor();
      expect(await page.getByRole('list', { name: 'Search results' }).textContent()).not.toContain(
        'leave.md',
      );
      await shot(page, 'documents');
      await page.context().close();
    });

    it('shows the SQL before anything runs, then runs it into a table and downloads it as CSV', async () => {
      const sql = 'SELECT region, count(*) AS n FROM sales GROUP BY region ORDER BY region';
      // One reply: Run sends the statement shown, so the model is not asked again.
      double.script({ json: { sql, explanation: 'Counts the sales of each region.' } });
      const page = await newPage('/query');
      await page.getByLabel('Question', { exact: true }).fill('How many sales per region?');
      await page.getByLabel('Schema', { exact: true }).fill(schema);
      await page.getByRole('button', { name: 'Show the SQL' }).click();
      // Shown as it would run: every table named in the schema.
      const qualified = sql.replace('FROM sales', `FROM "${schema}".sales`);
      await page.getByTestId('proposed-sql').filter({ hasText: qualified }).waitFor();
      await page.getByText('Counts the sales of each region.').waitFor();
      // Shown, not run: one model call (execute false), no result yet.
      expect(double.calls).toHaveLength(1);
      expect(await page.getByRole('table', { name: 'Query result' }).count()).toBe(0);

      await page.getByRole('button', { name: 'Run it' }).click();
      const table = page.getByRole('table', { name: 'Query result' });
      await table.waitFor();
      expect(await table.locator('tbody tr').allTextContents()).toEqual(['east10', 'north10', 'south10']);
      expect(double.calls).toHaveLength(1);
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: 'Download CSV' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe('query.csv');
      const csv = await readFile((await download.path()) as string, 'utf8');
      expect(csv).toBe('region,n\r\neast,10\r\nnorth,10\r\nsouth,10\r\n');
      await shot(page, 'query');
      await page.context().close();
    });

    it('streams an assistant answer, shows a tool call as it happens, and cancels a turn', async () => {
      double.script(
        { toolCalls: [{ name: 'list_pipelines', arguments: {} }] },
        { text: 'You have one pipeline: handbook.' },
      );
      const page = await newPage('/assistant');
      await page.getByLabel('Message', { exact: true }).fill('Which pipelines do I have?');
      await page.getByRole('button', { name: 'Send' }).click();
      const tool = page.locator('.tool-call', { hasText: 'list_pipelines' });
      await tool.filter({ hasText: 'done' }).waitFor();
      await tool.locator('summary').click();
      expect(await tool.textContent()).toContain('handbook');
      await page
        .getByTestId('assistant-text')
        .filter({ hasText: 'You have one pipeline: handbook.' })
        .waitFor();
      await page.getByText('Done.', { exact: true }).waitFor();
      // The conversation so far went back to the model with the tool's result.
      expect(ModelDouble.promptText(double.calls[1])).toContain('handbook');
      await shot(page, 'assistant');

      double.script({ hang: true });
      await page.getByLabel('Message', { exact: true }).fill('And now think for a very long time.');
      await page.getByRole('button', { name: 'Send' }).click();
      for (let i = 0; double.calls.length < 3 && i < 600; i++) await page.waitForTimeout(50);
      expect(double.calls).toHaveLength(3);
      await page.getByRole('button', { name: 'Cancel' }).click();
      await page.getByText('Cancelled.', { exact: true }).waitFor();
      for (let i = 0; !double.calls[2].closedEarly && i < 600; i++) await page.waitForTimeout(50);
      expect(double.calls[2].closedEarly).toBe(true);
      await page.context().close();
    });

    it('charts an incident’s evidence with its verdict, diffs its script versions, and resolves it', async () => {
      const table = `orders_${suffix}`;
      double.script({ json: { script: DQ_V1 } });
      await http()
        .post('/api/v1/pipeline')
        .send(
          csvPipeline(
            'orders',
            table,
            [
              ['id', 'int'],
              ['amount', 'double'],
              ['region', 'string'],
            ],
            { dataQuality: { aiInstruction: 'Reject negative amounts.' } },
          ),
        )
        .expect(200);
      // The script the POST writes in the background goes live first: a job racing it would ask the
      // model itself (the double has one reply), fail and land no sample, and the evidence would be
      // `needs-human` instead of `fail`.
      await until('the first data-quality script to go live', async () => {
        const res = await http().get('/api/v1/pipelines/orders/codegen-scripts').expect(200);
        return (res.body as { dataQuality: { version: number | null } | null }).dataQuality?.version === 1;
      });
      const rows = Array.from(
        { length: 10 },
        (_, i) => `${i + 1},${(i + 1) * 30},${i % 2 ? 'north' : 'south'}`,
      );
      const landed = await waitForJob(
        http(),
        await upload(http(), 'orders', `id,amount,region\n${rows.join('\n')}\n`, 'o.csv'),
      );
      expect(landed.rollup.status).toBe('success');
      double.script({ json: { script: DQ_STRICT } });
      await http().post('/api/v1/pipelines/orders/codegen-scripts/dataQuality/regenerate').expect(200);

      // The route the diff reads: one version with its text; a version that does not exist is 404.
      const v1 = await http()
        .get('/api/v1/pipelines/orders/codegen-scripts/dataQuality/versions/1')
        .expect(200);
      expect(v1.body).toMatchObject({ version: 1, script: DQ_V1, model: 'm' });
      const v2 = await http()
        .get('/api/v1/pipelines/orders/codegen-scripts/dataQuality/versions/2')
        .expect(200);
      expect(v2.body.script).toBe(DQ_STRICT);
      await http().get('/api/v1/pipelines/orders/codegen-scripts/dataQuality/versions/9').expect(404);
      await http().get('/api/v1/pipelines/orders/codegen-scripts/nonsense/versions/1').expect(400);

      // The incident opens a moment after the change (a listener of script changes), and the Overview
      // reads the list once: it is loaded only once the incident is there.
      await until('the incident of the change to open', async () => {
        const res = await http().get('/api/v1/incidents?pipeline=orders').expect(200);
        return (res.body as unknown[]).length > 0;
      });
      const page = await newPage('/');
      await page.getByRole('heading', { name: 'Open incidents' }).waitFor();
      await page.getByText('dataQuality 1 → 2').waitFor();
      await page.getByRole('link', { name: 'see the evidence' }).click();
      await page.getByRole('button', { name: /^Open the incident of orders/ }).click();
      // The evidence is computed in the sandbox a moment after the change: the page waits for the verdict
      // (bounded like every wait of the suite at 120 s: at five Jest workers on a loaded machine it took over 60).
      await page.locator('#incident-title ~ p .badge', { hasText: 'fail' }).waitFor({ timeout: 120_000 });
      await page.getByRole('img', { name: 'Null rate per column: baseline and candidate' }).waitFor();
      await page.getByRole('img', { name: 'Quantiles of amount: baseline and candidate' }).waitFor();
      await page
        .getByRole('img', { name: 'Most frequent values of region: baseline and candidate' })
        .waitFor();
      const checks = page.getByRole('table', { name: 'Checks' });
      expect(await checks.locator('tr.failed').count()).toBeGreaterThan(0);
      await page.getByText('dataQuality: version 1 → 2').click();
      const diff = page.getByRole('figure', { name: 'dataQuality version 1 against 2' });
      await diff.waitFor();
      expect(await diff.locator('tr.diff-added').textContent()).toContain('amount below 100');
      expect(await diff.locator('tr.diff-removed').textContent()).toContain('amount is negative');
      await shot(page, 'incidents');
      // The evidence alone, small enough for the docs page.
      await page
        .locator('section', { has: page.locator('#incident-title') })
        .screenshot({ path: join(__dirname, '..', '.artifacts', 'console', 'incidents-evidence.png') });

      await page.getByLabel('Resolution', { exact: true }).fill('Stricter rule was intended.');
      await page.getByRole('button', { name: 'Resolve' }).click();
      await page.getByTestId('incident-status').filter({ hasText: 'resolved' }).waitFor();
      await page.getByText('Stricter rule was intended.').waitFor();
      const [incident] = (await http().get('/api/v1/incidents?pipeline=orders').expect(200)).body as {
        id: string;
      }[];
      const stored = (await http().get(`/api/v1/incidents/${incident.id}`).expect(200)).body;
      expect(stored).toMatchObject({ status: 'resolved', resolution: 'Stricter rule was intended.' });
      await page.context().close();
    }, 240_000);

    it('tells a viewer why an upload and a restore are refused, and fits a phone-width screen', async () => {
      const page = await newPage('/documents', 'vera', 'a-viewer-passphrase');
      await page.getByText('Your role (viewer) lacks the capability document:upload.').waitFor();
      // Viewers may search: the playground stays usable.
      expect(await page.getByRole('button', { name: 'Search' }).isDisabled()).toBe(false);

      await page.getByRole('link', { name: 'CodeGen and incidents' }).click();
      await page.getByLabel('Pipeline of the scripts').selectOption('orders');
      const restore = page.getByRole('button', { name: 'Restore dataQuality version 1' });
      await restore.waitFor();
      expect(await restore.isDisabled()).toBe(true);
      await page.getByText('Your role (viewer) lacks the capability pipeline:update.').first().waitFor();

      await page.setViewportSize({ width: 390, height: 900 });
      for (const path of ['Documents and search', 'Query', 'Assistant', 'CodeGen and incidents']) {
        await page.getByRole('link', { name: path }).click();
        await page.getByRole('heading', { name: path, level: 1 }).waitFor();
        const overflow = await page.evaluate(() => {
          const w = globalThis as unknown as {
            innerWidth: number;
            document: { documentElement: { scrollWidth: number } };
          };
          return w.document.documentElement.scrollWidth - w.innerWidth;
        });
        expect({ path, overflow: Math.max(0, overflow) }).toEqual({ path, overflow: 0 });
      }
      await page.context().close();
    });
  },
);
