import { randomBytes } from 'node:crypto';
import { Browser, Page } from 'playwright-core';
import { TestWorker, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import {
  Served,
  consoleDescribe,
  logIn,
  newPage as openPage,
  openBrowser,
  serve,
  shot,
} from './support/console-browser';
import { uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';

/**
 * The console's administration pages in a real browser against the real API (and a worker): a pipeline
 * made from a sample, loaded, previewed and deleted; users, secrets and tenants; the Overview's recent jobs;
 * what a viewer is refused. One browser for the file, each test its own context.
 */
consoleDescribe('test/console-admin.e2e-spec.ts')('the console’s administration pages', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await openBrowser();
  });
  afterAll(() => browser?.close());
  const newPage = (url: string, width = 1280): Promise<Page> => openPage(browser, url, width);

  describe('a login (USE_USER_AUTH=true, USE_API_KEYS=true)', () => {
    const env = uniqueEnvironment('console-admin');
    const boot = newBootstrapKey();
    const password = 'console-admin-password';
    const table = `cadm_${env.slice(-8).replace(/-/g, '_')}`;
    let served: Served;
    let worker: TestWorker;

    beforeAll(async () => {
      served = await serve({
        TAPYARD_ENV: env,
        USE_USER_AUTH: 'true',
        USE_API_KEYS: 'true',
        TAPYARD_BOOTSTRAP_API_KEY: boot,
        TAPYARD_ADMIN_PASSWORD: password,
      });
      worker = await startWorker({ TAPYARD_ENV: env });
      await served.api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', boot)
        .send(csvPipeline(`${table}_kept`, `${table}_kept`, [['id', 'int']]))
        .expect(200);
      await served.api.http
        .post('/api/v1/users')
        .set('x-api-key', boot)
        .send({ username: 'vera', password: 'a-viewer-passphrase', role: 'viewer' })
        .expect(201);
    });
    afterAll(async () => {
      await worker?.close();
      await served?.api.close();
    });

    it('creates a pipeline from a sample with an edited column, loads into it, shows rejects and rows, and deletes it after typing its name', async () => {
      const name = `${table}_fruit`;
      const page = await newPage(`${served.url}/pipelines`);
      await logIn(page, 'admin', password);
      await page.getByRole('button', { name: 'New pipeline from a sample' }).click();
      await page.getByLabel('Sample file (CSV, TSV, JSON or XML)').setInputFiles({
        name: 'fruit.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('id,item,qty\n1,apple,2\n2,pear,3\n'),
      });
      await page.getByRole('button', { name: 'Propose a schema' }).click();
      const third = page.getByLabel('Name of column 3');
      expect(await third.inputValue()).toBe('qty');
      await third.fill('amount');
      await page.getByLabel('Type of column 3').selectOption('bigint');
      await page.getByLabel('Pipeline name').fill(name);
      await page.getByLabel('Destination table').fill(name);
      await page.getByRole('button', { name: 'Register pipeline' }).click();
      await page.getByText(`Pipeline ${name} saved: version 1.`).waitFor();
      const stored = await served.api.http
        .get('/api/v1/pipeline')
        .query({ pipeline: name })
        .set('x-api-key', boot)
        .expect(200);
      expect(stored.body.source.schemaProperties.fields).toEqual([
        { name: 'id', type: 'int' },
        { name: 'item', type: 'string' },
        { name: 'amount', type: 'bigint' },
      ]);

      // Edit shows the version, and a change makes the next one.
      await page.getByLabel('Search pipelines').fill(name);
      await page.getByRole('button', { name: `Edit ${name}` }).click();
      expect(await page.getByTestId('pipeline-version').textContent()).toBe(' (version 1)');
      await page.getByLabel('Catalog (optional)').fill('orchard');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText(`Pipeline ${name} saved: version 2.`).waitFor();
      await shot(page, 'pipelines-edit');

      await page.getByRole('button', { name: `Load a file into ${name}` }).click();
      await page.getByLabel('File', { exact: true }).setInputFiles({
        name: 'fruit-1.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('id,item,amount\n1,apple,2\n2,pear,lots\n3,plum,4\n'),
      });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.locator('.job .badge', { hasText: 'warning' }).waitFor();
      const reject = page.getByRole('table', { name: 'Rejected rows' }).locator('tbody tr');
      await reject.waitFor();
      expect(await reject.count()).toBe(1);
      expect(await reject.locator('td').first().textContent()).toBe('3');
      expect(await reject.locator('td').nth(1).textContent()).toContain('lots');
      const rows = page.getByRole('table', { name: 'Loaded rows' });
      await rows.waitFor();
      expect(await rows.locator('thead th').allTextContents()).toEqual(['id', 'item', 'amount']);
      expect(await rows.locator('tbody tr').allTextContents()).toEqual(['1apple2', '3plum4']);
      await shot(page, 'pipelines-rejects-preview');

      await page.getByRole('link', { name: 'Overview' }).click();
      const recent = page.getByRole('table', { name: 'Recent jobs' }).locator('tbody tr', { hasText: name });
      await recent.waitFor();
      expect(await recent.textContent()).toContain('warning');
      await shot(page, 'overview-recent-jobs');

      await page.getByRole('link', { name: 'Pipelines' }).click();
      await page.getByLabel('Search pipelines').fill(name);
      await page.getByRole('button', { name: `Delete ${name}` }).click();
      const confirm = page.getByLabel(`Type the pipeline's name (${name}) to confirm`);
      const remove = page.getByRole('button', { name: 'Delete pipeline' });
      await confirm.fill(name.toUpperCase());
      expect(await remove.isDisabled()).toBe(true);
      await confirm.fill(name);
      await remove.click();
      await page.getByText(`Pipeline ${name} deleted with its data.`).waitFor();
      await served.api.http
        .get('/api/v1/pipeline')
        .query({ pipeline: name })
        .set('x-api-key', boot)
        .expect(404);
      await page.context().close();
    });

    it('creates a user, changes its role, resets its password and deletes it', async () => {
      const page = await newPage(`${served.url}/admin/users`);
      await logIn(page, 'admin', password);
      await page.getByLabel('Username').fill('casey');
      await page.getByLabel('Password (12 characters or more)').fill('casey-first-passphrase');
      await page.getByLabel('Role', { exact: true }).selectOption('viewer');
      await page.getByRole('button', { name: 'Create user' }).click();
      await page.locator('tr[data-user="casey"]').waitFor();
      await page.getByLabel('Role of casey').selectOption('editor');
      await page.getByText('casey: role is now editor.', { exact: false }).waitFor();
      const users = await served.api.http.get('/api/v1/users').set('x-api-key', boot).expect(200);
      expect(users.body).toContainEqual(expect.objectContaining({ username: 'casey', role: 'editor' }));

      await page.getByRole('button', { name: 'Reset the password of casey' }).click();
      await page.getByLabel('New password for casey').fill('casey-second-passphrase');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByText('casey: password reset.', { exact: false }).waitFor();
      await served.api.http
        .post('/api/v1/auth/login')
        .send({ username: 'casey', password: 'casey-second-passphrase' })
        .expect(200);
      await shot(page, 'users');

      await page.getByRole('button', { name: 'Delete casey' }).click();
      await page.getByRole('button', { name: 'Confirm deleting casey' }).click();
      await page.getByText('casey deleted.').waitFor();
      await page.locator('tr[data-user="casey"]').waitFor({ state: 'detached' });
      const after = await served.api.http.get('/api/v1/users').set('x-api-key', boot).expect(200);
      expect(after.body.map((u: { username: string }) => u.username)).not.toContain('casey');
      // Not multi-tenant: the Tenants page says so instead of offering forms that could only fail.
      await page.getByRole('link', { name: 'Tenants' }).click();
      await page.getByText('This instance is not multi-tenant', { exact: false }).waitFor();
      await page.context().close();
    });

    it('creates a secret and shows it masked: the value is nowhere in the page or its storage afterwards', async () => {
      const value = `s3cr3t-${randomBytes(8).toString('hex')}`;
      const rotated = `r0tated-${randomBytes(8).toString('hex')}`;
      const page = await newPage(`${served.url}/admin/secrets`);
      await logIn(page, 'admin', password);
      await page.getByLabel('Secret name').fill('warehouse');
      expect(await page.getByLabel('Field 1', { exact: true }).inputValue()).toBe('password');
      await page.getByLabel('Value of field 1').fill(value);
      await page.getByRole('button', { name: 'Add a field' }).click();
      await page.getByLabel('Field 2', { exact: true }).fill('host');
      await page.getByLabel('Value of field 2').fill('db.internal');
      await page.getByRole('button', { name: 'Save secret' }).click();
      await page.getByText('Secret warehouse saved.', { exact: false }).waitFor();
      await page.getByRole('button', { name: 'Show warehouse masked' }).click();
      expect(await page.getByTestId('secret-field-password').textContent()).toBe('\u2022'.repeat(8));
      expect(await page.getByTestId('secret-field-host').textContent()).toBe('db.internal');

      await page.getByRole('button', { name: 'Replace the values of warehouse' }).click();
      await page.getByRole('heading', { name: 'Replace the values of warehouse' }).waitFor();
      await page.getByLabel('Value of field 1').fill(rotated);
      await page.getByLabel('Value of field 2').fill('db2.internal');
      await page.getByRole('button', { name: 'Replace values', exact: true }).click();
      await page.getByText('Secret warehouse saved.', { exact: false }).waitFor();
      await page.getByTestId('secret-field-host').filter({ hasText: 'db2.internal' }).waitFor();
      await shot(page, 'secrets');

      // The DOM (markup and every field's live value) and both storages hold neither value.
      const left = await page.evaluate(() => {
        const d = (globalThis as unknown as { document: { documentElement: { outerHTML: string } } })
          .document;
        const inputs = (
          globalThis as unknown as { document: { querySelectorAll(s: string): { value: string }[] } }
        ).document.querySelectorAll('input');
        return {
          html: d.documentElement.outerHTML,
          values: Array.from(inputs).map((i) => i.value),
          local: localStorage.length,
          session: sessionStorage.length,
        };
      });
      for (const v of [value, rotated]) {
        expect(left.html).not.toContain(v);
        expect(left.values).not.toContain(v);
      }
      expect([left.local, left.session]).toEqual([0, 0]);

      await page.getByRole('button', { name: 'Delete warehouse' }).click();
      await page.getByRole('button', { name: 'Confirm deleting warehouse' }).click();
      await page.getByText('Secret warehouse deleted.').waitFor();
      await served.api.http.get('/api/v1/secrets/warehouse').set('x-api-key', boot).expect(404);
      await page.context().close();
    });

    it('shows a viewer the administration it may not do, with the reason', async () => {
      const page = await newPage(`${served.url}/pipelines`);
      await logIn(page, 'vera', 'a-viewer-passphrase');
      await page.getByText('Your role (viewer) lacks the capability pipeline:create.').waitFor();
      expect(await page.getByRole('button', { name: 'New pipeline from a sample' }).isDisabled()).toBe(true);
      expect(await page.getByRole('button', { name: `Delete ${table}_kept` }).isDisabled()).toBe(true);
      await page.getByRole('button', { name: `Edit ${table}_kept` }).click();
      await page.getByText('Your role (viewer) lacks the capability pipeline:update.').waitFor();
      expect(await page.getByRole('button', { name: 'Save changes' }).isDisabled()).toBe(true);
      // Each page fits a phone-width screen: wide tables scroll inside their box, forms wrap.
      await page.setViewportSize({ width: 390, height: 900 });
      const overflow = (): Promise<number> =>
        page.evaluate(() => {
          const w = globalThis as unknown as {
            innerWidth: number;
            document: { documentElement: { scrollWidth: number } };
          };
          return w.document.documentElement.scrollWidth - w.innerWidth;
        });
      expect(await overflow()).toBeLessThanOrEqual(0);
      await page.getByRole('link', { name: 'Users' }).click();
      await page.getByText('Your role (viewer) lacks the capability user:read.').waitFor();
      expect(await overflow()).toBeLessThanOrEqual(0);
      expect(await page.getByRole('button', { name: 'Create user' }).isDisabled()).toBe(true);
      await page.getByRole('link', { name: 'Secrets' }).click();
      await page.getByText('Your role (viewer) lacks the capability secret:read.').waitFor();
      expect(await page.getByRole('button', { name: 'Save secret' }).isDisabled()).toBe(true);
      expect(await overflow()).toBeLessThanOrEqual(0);
      await page.getByRole('link', { name: 'Tenants' }).click();
      await page.getByText('This instance is not multi-tenant', { exact: false }).waitFor();
      expect(await overflow()).toBeLessThanOrEqual(0);
      await shot(page, 'secrets-viewer');
      await page.context().close();
    });
  });

  describe('multi-tenant mode (a pasted key)', () => {
    const boot = newBootstrapKey();
    const env = uniqueEnvironment('console-tenants');
    const tenant = `ct${env.slice(-8).replace(/-/g, '')}`;
    let served: Served;
    let keyAdmin: string;

    beforeAll(async () => {
      served = await serve({
        TAPYARD_ENV: env,
        MULTI_TENANT: 'true',
        USE_API_KEYS: 'true',
        TAPYARD_BOOTSTRAP_API_KEY: boot,
      });
      keyAdmin = await issueKey(served.api.http, boot, 'keyadmin', {
        capabilities: ['key:create', 'key:read'],
      });
    });
    afterAll(() => served?.api.close());

    it("issues a tenant's first key with full access, and tells a key that may only create keys why not", async () => {
      const page = await newPage(`${served.url}/admin/tenants`);
      await page.getByLabel('API key').fill(boot);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('Tenant', { exact: true }).fill(tenant);
      await page.getByLabel('Key label').fill('tenant-admin');
      await page.getByRole('button', { name: 'Issue tenant key' }).click();
      await page.getByRole('heading', { name: `Key tenant-admin of tenant ${tenant} issued` }).waitFor();
      const value = (await page.getByTestId('key-value').textContent()) ?? '';
      expect(value).toMatch(/^tpy_/);
      // The new key acts in its tenant: its key map holds it, the operator's does not.
      const own = await served.api.http.get('/api/v1/keys').set('x-api-key', value).expect(200);
      expect(own.body.map((k: { label: string }) => k.label)).toContain('tenant-admin');
      const operator = await served.api.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
      expect(operator.body.map((k: { label: string }) => k.label)).not.toContain('tenant-admin');
      await shot(page, 'tenants');
      await page.context().close();

      const limited = await newPage(`${served.url}/admin/tenants`);
      await limited.getByLabel('API key').fill(keyAdmin);
      await limited.getByRole('button', { name: 'Sign in' }).click();
      await limited
        .getByText('Administering tenants needs full access (*:*) in the operator environment.')
        .waitFor();
      expect(await limited.getByRole('button', { name: 'Issue tenant key' }).isDisabled()).toBe(true);
      await limited.context().close();
    });
  });
});
