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
 * The administration console in a real browser (Debian's chromium driven by playwright-core) against the
 * real API serving the built console, with a real worker and peers. One browser for the file; each test its
 * own context. Screenshots of each page go to .artifacts/console/ (gitignored).
 */
consoleDescribe('test/console.e2e-spec.ts')('the console, served by the API', () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await openBrowser();
  });
  afterAll(() => browser?.close());

  const newPage = (url: string, width = 1280): Promise<Page> => openPage(browser, url, width);

  describe('USE_USER_AUTH=true, USE_API_KEYS=true: a login', () => {
    const env = uniqueEnvironment('console');
    const boot = newBootstrapKey();
    const password = 'console-admin-password';
    const flags = {
      TAPYARD_ENV: env,
      USE_USER_AUTH: 'true',
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      TAPYARD_ADMIN_PASSWORD: password,
    };
    const table = `console_${env.slice(-8).replace(/-/g, '_')}`;
    let served: Served;
    let worker: TestWorker;

    beforeAll(async () => {
      served = await serve(flags);
      worker = await startWorker({ TAPYARD_ENV: env });
      await served.api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', boot)
        .send(
          csvPipeline(`${table}_p`, table, [
            ['id', 'int'],
            ['item', 'string'],
          ]),
        )
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

    it('serves the page under a self-only CSP, assets cached for good, the page revalidated, and the API untouched', async () => {
      const http = served.api.http;
      const page = await http.get('/').expect(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toContain("default-src 'self'");
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      expect(page.headers['cache-control']).toBe('no-cache');
      const asset = /src="(\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
      expect(asset).toBeDefined();
      const js = await http.get(asset as string).expect(200);
      expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      // A browser opening a console route gets the page; a program asking a wrong path gets the API's 404.
      const route = await http.get('/admin/keys').set('accept', 'text/html').expect(200);
      expect(route.text).toBe(page.text);
      const wrong = await http.get('/no-such-thing').set('accept', 'application/json').expect(404);
      expect(wrong.body).toMatchObject({ statusCode: 404 });
      await http.get('/api/v1/no-such-route').set('accept', 'text/html').expect(404);
      await http.get('/livez').expect(200, { status: 'ok' });
      await http.get('/api/v1/pipelines').expect(401);
    });

    it('logs in from the keyboard, shows the overview, signs out, and tells an expired session apart', async () => {
      const page = await newPage(served.url);
      await page.getByLabel('Username').focus();
      await page.keyboard.type('admin');
      await page.keyboard.press('Tab');
      await page.keyboard.type(password);
      await page.keyboard.press('Enter');
      await expect(page.getByTestId('identity').textContent()).resolves.toBe('session:admin · admin');
      await page.locator('.service').first().waitFor();
      expect(await page.locator('.service', { hasText: 'postgres' }).textContent()).toContain('up');
      await shot(page, 'overview');

      // The session ends behind the console's back: the next call's 401 is told as an expiry.
      await page.context().clearCookies();
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByText('Your session has expired or was ended. Sign in again.').waitFor();
      await shot(page, 'session-expired');

      await logIn(page, 'admin', password);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('Signed out.').waitFor();
      await page.getByLabel('Username').waitFor();
      await page.context().close();
    });

    it('issues a key from a template, shows its value once, rotates it (the old value stops working) and revokes it', async () => {
      const page = await newPage(`${served.url}/admin/keys`);
      await logIn(page, 'admin', password);
      await page.getByLabel('Label').fill('reporter');
      await page.getByLabel('Template', { exact: true }).selectOption('reporting');
      await page.getByRole('button', { name: 'Issue key' }).click();
      await page.getByRole('heading', { name: 'Key reporter issued' }).waitFor();
      const first = (await page.getByTestId('key-value').textContent()) ?? '';
      expect(first).toMatch(/^tpy_/);
      await served.api.http.get('/api/v1/pipelines').set('x-api-key', first).expect(200);
      await page.getByRole('button', { name: 'Done' }).click();
      await expect(page.getByTestId('key-value').count()).resolves.toBe(0);
      expect(await page.locator('tr[data-label="reporter"]').textContent()).toContain('reporting');

      await page.getByRole('button', { name: 'Rotate reporter' }).click();
      await page.getByRole('heading', { name: 'Key reporter rotated' }).waitFor();
      const second = (await page.getByTestId('key-value').textContent()) ?? '';
      expect(second).toMatch(/^tpy_/);
      expect(second).not.toBe(first);
      await served.api.http.get('/api/v1/pipelines').set('x-api-key', first).expect(401);
      await served.api.http.get('/api/v1/pipelines').set('x-api-key', second).expect(200);
      await shot(page, 'api-keys');
      await page.getByRole('button', { name: 'Done' }).click();
      await page.getByRole('button', { name: 'Revoke reporter' }).click();
      await page.getByRole('button', { name: 'Confirm revoking reporter' }).click();
      await page
        .locator('tr[data-label="reporter"]')
        .getByRole('cell', { name: 'revoked', exact: true })
        .waitFor();
      await served.api.http.get('/api/v1/pipelines').set('x-api-key', second).expect(401);
      // Nothing the console holds survives the tab: no storage at all in login mode.
      const stored = await page.evaluate(() => [localStorage.length, sessionStorage.length]);
      expect(stored).toEqual([0, 0]);
      await page.context().close();
    });

    it('uploads a CSV with a byte progress bar to success, and shows the reason and line of a rejected row', async () => {
      const page = await newPage(`${served.url}/pipelines`);
      await logIn(page, 'admin', password);
      await page.getByLabel('Search pipelines').fill(table);
      await page.getByRole('button', { name: `Load a file into ${table}_p` }).click();
      const good = Buffer.from('id,item\n1,apple\n2,pear\n3,plum\n');
      await page
        .getByLabel('File', { exact: true })
        .setInputFiles({ name: 'fruit.csv', mimeType: 'text/csv', buffer: good });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.locator('.job .badge', { hasText: 'success' }).waitFor();
      await page.getByText('(done)').waitFor();
      // The multipart body is a little larger than the file: every byte of it was reported sent.
      const sent = /^(\d+) of (\d+) bytes \(100%\)$/.exec(
        (await page.getByTestId('upload-bytes').textContent()) ?? '',
      );
      expect(sent).not.toBeNull();
      expect(Number(sent?.[1])).toBeGreaterThan(good.length);
      // (The callbacks run in the page; this file is compiled without the DOM's types.)
      const bar = await page.locator('progress').evaluate((p) => ({
        value: (p as unknown as { value: number }).value,
        max: (p as unknown as { max: number }).max,
      }));
      expect(bar.value).toBe(bar.max);
      expect(await page.getByTestId('rows').textContent()).toBe('3 rows loaded, 0 rejected');
      const stages = await page.getByRole('list', { name: 'Stages' }).textContent();
      expect(stages).toContain('DataQuality');
      expect(stages).toContain('PostgresLoader');
      await shot(page, 'pipelines-upload');

      const bad = Buffer.from('id,item\nabc,apple\n');
      await page
        .getByLabel('File', { exact: true })
        .setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: bad });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.locator('.job .badge', { hasText: 'error' }).waitFor();
      const reject = page.getByRole('table', { name: 'Rejected rows' }).locator('tbody tr');
      await reject.waitFor();
      expect(await reject.locator('td').first().textContent()).toBe('2');
      expect(await reject.locator('td').nth(1).textContent()).toContain('abc');
      await shot(page, 'pipelines-reject');
      await page.context().close();
    });

    it('shows a viewer what it may not do, with the reason, instead of failing', async () => {
      const page = await newPage(`${served.url}/admin/keys`);
      await logIn(page, 'vera', 'a-viewer-passphrase');
      expect(await page.getByTestId('identity').textContent()).toBe('session:vera · viewer');
      await page.getByText('Your role (viewer) lacks the capability key:create.').waitFor();
      await page.getByText('Your role (viewer) lacks the capability key:read.').waitFor();
      expect(await page.getByRole('button', { name: 'Issue key' }).isDisabled()).toBe(true);
      await shot(page, 'api-keys-viewer');
      await page.getByRole('link', { name: 'Pipelines' }).click();
      await page.getByRole('button', { name: `Load a file into ${table}_p` }).click();
      await page.getByText('Your role (viewer) lacks the capability pipeline:upload.').waitFor();
      expect(await page.getByRole('button', { name: 'Upload' }).isDisabled()).toBe(true);
      await page.context().close();
    });
  });

  describe('USE_API_KEYS=true alone: a pasted key', () => {
    const boot = newBootstrapKey();
    let served: Served;
    let keyops: string;

    beforeAll(async () => {
      served = await serve({
        TAPYARD_ENV: uniqueEnvironment('console-keys'),
        USE_API_KEYS: 'true',
        TAPYARD_BOOTSTRAP_API_KEY: boot,
      });
      keyops = await issueKey(served.api.http, boot, 'keyops', {
        capabilities: ['key:read', 'key:update', 'platform:read'],
      });
      await issueKey(served.api.http, boot, 'reader', { template: 'read-only' });
    });
    afterAll(() => served?.api.close());

    it('keeps the key in session storage only, and shows a refused rotation as a 403', async () => {
      const page = await newPage(served.url);
      await page.getByLabel('API key').fill('tpy_not-a-key-of-this-instance');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('This key is not valid here (unknown, rotated or revoked).').waitFor();
      await page.getByLabel('API key').fill(keyops);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page.getByTestId('identity').textContent()).resolves.toBe('keyops');
      const storage = await page.evaluate(() => ({
        local: localStorage.length,
        session: sessionStorage.getItem('tapyard.apiKey'),
      }));
      expect(storage).toEqual({ local: 0, session: keyops });

      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByText('The key keyops lacks the capability key:create.').waitFor();
      expect(await page.getByRole('button', { name: 'Revoke reader' }).isDisabled()).toBe(true);
      // keyops may rotate keys, but only those whose capabilities it holds: the API refuses, the page says so.
      await page.getByRole('button', { name: 'Rotate reader' }).click();
      await page.getByRole('alert').filter({ hasText: 'Refused (403 Forbidden)' }).waitFor();
      await shot(page, 'api-keys-pasted-key-403');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('API key').waitFor();
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      await page.context().close();
    });
  });

  describe('both off: no sign-in', () => {
    let served: Served;
    beforeAll(async () => (served = await serve({ TAPYARD_ENV: uniqueEnvironment('console-open') })));
    afterAll(() => served?.api.close());

    it('opens on the overview without asking for anything, and fits a phone-width screen', async () => {
      const page = await newPage(served.url, 390);
      await expect(page.getByTestId('identity').textContent()).resolves.toBe(
        'anonymous (no sign-in on this instance)',
      );
      await page.getByRole('heading', { name: 'Recent jobs' }).waitFor();
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      await page.getByRole('link', { name: 'Pipelines' }).click();
      await page.getByRole('table', { name: 'Pipelines' }).waitFor();
      const overflow = await page.evaluate(() => {
        const w = globalThis as unknown as {
          innerWidth: number;
          document: { documentElement: { scrollWidth: number } };
        };
        return w.document.documentElement.scrollWidth - w.innerWidth;
      });
      expect(overflow).toBeLessThanOrEqual(0);
      await shot(page, 'pipelines-phone');
      await page.context().close();
    });
  });
});
