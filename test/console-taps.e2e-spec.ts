import { join } from 'node:path';
import { Browser, Locator, Page } from 'playwright-core';
import { newBootstrapKey } from './support/auth';
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
import { ModelDouble } from './support/model-double';

/**
 * The console's Taps pages in a real browser against the real API serving the built console: taps are
 * written in the editor, tested and run in the real sandbox, stored in MinIO, and the AI flow talks to the
 * loopback model double (OpenAI wire protocol) through the API's own provider layer.
 */
const limited = (body: string): string => `import os


def fetch():
    limit = int(os.environ.get("SERVICE_TAP_TEST_LIMIT", "0") or 0)
    n = limit if limit > 0 else 3
${body}
`;
const FRUIT = limited(`    print("fetching fruit")
    names = ["apple", "pear", "plum"]
    for i in range(min(n, 3)):
        yield {"id": i + 1, "item": names[i]}`);
const WARNING_ROWS = limited(`    print("WARNING: the API ignored page_size, fetching one row per call")
    for i in range(min(n, 3)):
        yield {"id": i + 1, "item": f"row{i}"}`);
const ROWS = limited(`    for i in range(min(n, 3)):
        yield {"id": i + 1, "item": f"row{i}"}`);
// The "optimised" script sleeps: far more than 20 % slower than ROWS, so the guard must revert it.
const SLOW_ROWS = limited(`    import time
    for i in range(min(n, 3)):
        time.sleep(0.5)
        yield {"id": i + 1, "item": f"row{i}"}`);

consoleDescribe('test/console-taps.e2e-spec.ts')('the console: Taps', () => {
  const env = uniqueEnvironment('console-taps');
  const boot = newBootstrapKey();
  const password = 'console-taps-admin-password';
  const table = `ctaps_${env.slice(-8).replace(/-/g, '_')}`;
  const pipeline = `${table}_p`;
  const double = new ModelDouble();
  let browser: Browser;
  let served: Served;

  const newPage = (path: string, width = 1280): Promise<Page> =>
    openPage(browser, `${served.url}${path}`, width);

  /** The part of the page from `first` to `last` (for docs/images, kept small), beside the full-page shots. */
  async function regionShot(page: Page, first: Locator, last: Locator, name: string): Promise<void> {
    const [a, b] = [await first.boundingBox(), await last.boundingBox()];
    if (!a || !b) throw new Error(`${name}: nothing to photograph`);
    // Bounding boxes are in the viewport; a full-page clip is in the page.
    const scrolled = await page.evaluate(() => (globalThis as unknown as { scrollY: number }).scrollY);
    const top = Math.max(0, scrolled + a.y - 8);
    await page.screenshot({
      path: join(__dirname, '..', '.artifacts', 'console', `${name}.png`),
      fullPage: true,
      clip: {
        x: 0,
        y: top,
        width: page.viewportSize()?.width ?? 1280,
        height: scrolled + b.y + b.height + 8 - top,
      },
    });
  }

  /** Replaces the editor's whole text as typed input (CodeMirror's own input handling). */
  async function typeScript(page: Page, script: string): Promise<void> {
    const editor = page.getByRole('textbox', { name: 'Script (Python)' });
    await editor.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(script);
  }

  beforeAll(async () => {
    await double.start();
    [browser, served] = await Promise.all([
      openBrowser(),
      serve({
        TAPYARD_ENV: env,
        USE_USER_AUTH: 'true',
        USE_API_KEYS: 'true',
        TAPYARD_BOOTSTRAP_API_KEY: boot,
        TAPYARD_ADMIN_PASSWORD: password,
        TAP_EGRESS_ALLOW: double.address,
      }),
    ]);
    const http = served.api.http;
    const post = (path: string, body: object) =>
      http.post(`/api/v1${path}`).set('x-api-key', boot).send(body);
    await post(
      '/pipeline',
      csvPipeline(pipeline, table, [
        ['id', 'int'],
        ['item', 'string'],
      ]),
    ).expect(200);
    await post('/users', { username: 'vera', password: 'a-viewer-passphrase', role: 'viewer' }).expect(201);
    await http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', boot)
      .send({
        provider: 'openai-compatible',
        baseUrl: double.openaiUrl,
        apiKey: 'sk-double',
        model: 'author-1',
      })
      .expect(200);
    // A tap whose script fails, run once: the Overview lists it as failing.
    await post('/tap', {
      name: 'broken',
      targetPipeline: pipeline,
      script: 'def fetch():\n    raise RuntimeError("the upstream answered 500")\n',
    }).expect(200);
    const failed = await post('/tap/run', { name: 'broken', mode: 'run' }).expect(200);
    expect(failed.body.error).toContain('the upstream answered 500');
  });
  afterAll(async () => {
    await browser?.close();
    await served?.api.close();
    await double.stop();
  });

  it('creates a tap in the editor (Python highlighted, numbered lines), tests it (records and logs), runs it and shows the run in its history', async () => {
    const page = await newPage('/taps');
    await logIn(page, 'admin', password);
    await page.getByRole('button', { name: 'New tap' }).click();
    await page.getByLabel('Name', { exact: true }).fill('fruit');
    await page.getByLabel('Target pipeline').fill(pipeline);
    await typeScript(page, FRUIT);

    // Highlighting: a keyword is drawn in another colour than plain text; every line has its number.
    const keyword = page.locator('.cm-line span', { hasText: /^def$/ }).first();
    // (The callback runs in the page; this file is compiled without the DOM's types.)
    const colours = await keyword.evaluate((el) => {
      const page = globalThis as unknown as { getComputedStyle: (e: unknown) => { color: string } };
      const content = (el as unknown as { closest: (s: string) => unknown }).closest('.cm-content');
      return [page.getComputedStyle(el).color, page.getComputedStyle(content).color];
    });
    expect(colours[0]).not.toBe(colours[1]);
    const numbers = await page.locator('.cm-lineNumbers .cm-gutterElement').allTextContents();
    expect(numbers).toEqual(expect.arrayContaining(['1', String(FRUIT.trimEnd().split('\n').length)]));

    // A test of the unsaved script: its records as a table, its logs.
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await expect(page.getByTestId('test-summary').textContent()).resolves.toMatch(/^3 records in \d+ ms/);
    const records = page.getByRole('table', { name: 'Test records' });
    expect(await records.locator('thead th').allTextContents()).toEqual(['id', 'item']);
    expect(await records.locator('tbody tr').nth(2).locator('td').allTextContents()).toEqual(['3', 'plum']);
    expect(await page.getByLabel('Logs').textContent()).toContain('fetching fruit');

    await page.getByRole('button', { name: 'Create tap' }).click();
    await page.getByRole('heading', { name: 'Tap fruit' }).waitFor();
    const stored = await served.api.http.get('/api/v1/tap?name=fruit').set('x-api-key', boot).expect(200);
    expect(stored.body).toMatchObject({ script: FRUIT, targetPipeline: pipeline });

    await page.getByRole('button', { name: 'Run now' }).click();
    await expect(page.getByTestId('run-summary').textContent()).resolves.toContain(
      `3 records sent to ${pipeline}`,
    );
    const history = page.getByRole('table', { name: 'Run history' }).locator('tbody tr').first();
    await history.waitFor();
    expect(await history.locator('td').allTextContents()).toEqual(
      expect.arrayContaining(['run', 'manual', 'success', '3']),
    );
    // The saved tap tested again: the page with the editor, the records, the logs and the history.
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page.getByRole('table', { name: 'Test records' }).waitFor();
    await shot(page, 'taps-editor');
    await regionShot(
      page,
      page.getByRole('heading', { name: 'Script' }),
      page.getByRole('region', { name: 'Test result' }),
      'taps-editor-region',
    );
    await page.context().close();
  });

  it('turns English into a schedule with its next five fire times, saved with the tap; the list shows the next fire time and last status', async () => {
    const page = await newPage('/taps?tap=fruit');
    await logIn(page, 'admin', password);
    await page.getByLabel('Schedule in English').fill('every weekday at 7am');
    await page.getByRole('button', { name: 'Translate' }).click();
    await expect(page.getByTestId('cron-expression').textContent()).resolves.toBe('0 0 7 ? * MON-FRI');
    const times = await page.getByRole('list', { name: 'Next fire times' }).locator('li').allTextContents();
    expect(times).toHaveLength(5);
    for (const t of times) expect(new Date(t).getUTCHours()).toBe(7);
    await shot(page, 'taps-cron');
    await page.getByRole('button', { name: 'Use this schedule' }).click();
    expect(await page.getByLabel('Cron expression (Quartz, seconds first)').inputValue()).toBe(
      '0 0 7 ? * MON-FRI',
    );
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Next fire times (saved schedule)').waitFor();

    await page.getByRole('link', { name: 'Taps', exact: true }).click();
    const row = page.locator('tr[data-tap="fruit"]');
    await row.waitFor();
    const api = await served.api.http.get('/api/v1/tap?name=fruit').set('x-api-key', boot).expect(200);
    // As the browser writes that time in its own locale and zone.
    const shown = await page.evaluate(
      (iso) => new Date(iso).toLocaleString(),
      api.body.nextFireTimes[0] as string,
    );
    expect(await row.getByTestId('next-fire').textContent()).toBe(shown);
    expect(await row.getByTestId('last-status').locator('.badge').textContent()).toBe('success');
    expect(await page.locator('tr[data-tap="broken"] .badge').textContent()).toBe('error');
    await shot(page, 'taps-list');

    // The Overview names the failing tap with its error.
    await page.getByRole('link', { name: 'Overview' }).click();
    const failing = page.getByRole('list', { name: 'Failing taps' });
    await failing.waitFor();
    expect(await failing.textContent()).toContain('broken');
    expect(await failing.textContent()).toContain('the upstream answered 500');
    expect(await failing.textContent()).not.toContain('fruit');
    await page.context().close();
  });

  it('generates a script with the model and shows its diff before saving; review rewrites, re-test, then optimise is reverted by the 20 % guard (spec rule 5)', async () => {
    const page = await newPage('/taps?new=1');
    await logIn(page, 'admin', password);
    await page.getByLabel('Name', { exact: true }).fill('demo');
    await page.getByLabel('Target pipeline').fill(pipeline);
    await page.getByLabel('Description').fill('Three demo rows');

    double.script({ json: { script: WARNING_ROWS, packages: [] } });
    await page.getByRole('button', { name: 'Generate from the description' }).click();
    const diff = page.getByRole('figure', { name: 'Generated script' });
    await diff.waitFor();
    expect(await diff.locator('tr[data-kind="added"]').count()).toBeGreaterThan(0);
    expect(await diff.textContent()).toContain('WARNING: the API ignored page_size');
    // Nothing is adopted before the person saves it.
    await served.api.http.get('/api/v1/tap?name=demo').set('x-api-key', boot).expect(404);
    await shot(page, 'taps-ai-diff');
    await regionShot(
      page,
      page.getByRole('heading', { name: 'Script' }),
      page.getByRole('button', { name: 'Save this version' }),
      'taps-ai-diff-region',
    );
    await page.getByRole('button', { name: 'Save this version' }).click();
    await page.getByRole('heading', { name: 'Tap demo' }).waitFor();
    const saved = await served.api.http.get('/api/v1/tap?name=demo').set('x-api-key', boot).expect(200);
    expect(saved.body.script).toBe(WARNING_ROWS);
    expect(saved.body.scriptPath).toMatch(/^tap-scripts\/demo_/);

    // Review needs a test of this script; its logs carry a signal, so the model rewrites it.
    const review = page.getByRole('button', { name: 'Review' });
    expect(await review.isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page.getByTestId('test-summary').waitFor();
    double.script({ json: { script: ROWS, packages: [], changes: ['Ask for 100 rows per page'] } });
    await review.click();
    await page.getByRole('figure', { name: 'Reviewed script' }).waitFor();
    expect(await page.getByRole('list', { name: 'Changes' }).textContent()).toContain('100 rows per page');
    expect(await page.getByTestId('ai-outcome').textContent()).toContain('test it again before optimising');
    await page.getByRole('button', { name: 'Save this version' }).click();
    await page.getByText(/^Saved demo/).waitFor();
    const optimise = page.getByRole('button', { name: 'Optimise' });
    expect(await optimise.isDisabled()).toBe(true);
    await page
      .getByText('Test this script first: the review reads the logs of its test run.')
      .first()
      .waitFor();

    // Re-test: no signal now, so the review changes nothing (no model call) and optimise opens.
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page
      .getByText('The review rewrote the script: save it, re-test and review again before optimising.')
      .waitFor();
    const calls = double.calls.length;
    await review.click();
    await page.getByText('The review found no signal in the logs').waitFor();
    expect(double.calls.length).toBe(calls);
    expect(await optimise.isDisabled()).toBe(false);

    // The optimiser's rewrite is slower: the server re-tests both and the console says it was reverted.
    double.script({ json: { script: SLOW_ROWS, packages: [], changes: ['fewer allocations'] } });
    await optimise.click();
    const outcome = page.getByTestId('ai-outcome');
    await outcome.filter({ hasText: 'Reverted' }).waitFor();
    expect(await outcome.textContent()).toMatch(/slower \(original \d+ ms, rewrite \d+ ms\)/);
    expect(await page.getByRole('button', { name: 'Save this version' }).count()).toBe(0);
    const after = await served.api.http.get('/api/v1/tap?name=demo').set('x-api-key', boot).expect(200);
    expect(after.body.script).toBe(ROWS);
    await shot(page, 'taps-ai-reverted');
    await page.context().close();
  });

  it("shows a viewer the tap's actions disabled with the reason, and fits a phone's width", async () => {
    const page = await newPage('/taps', 390);
    await logIn(page, 'vera', 'a-viewer-passphrase');
    await page.getByText('Your role (viewer) lacks the capability tap:update.').first().waitFor();
    expect(await page.getByRole('button', { name: 'New tap' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Open fruit' }).click();
    await page.getByRole('heading', { name: 'Tap fruit' }).waitFor();
    await page.getByText('Your role (viewer) lacks the capability tap:run.').first().waitFor();
    await page.getByText('Your role (viewer) lacks the capability tap:delete.').waitFor();
    for (const name of ['Save', 'Test', 'Run now', 'Generate from the description', 'Review', 'Optimise'])
      expect(await page.getByRole('button', { name, exact: true }).isDisabled()).toBe(true);
    // The script shows, read-only.
    await page.locator('.cm-line', { hasText: 'fetching fruit' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Script (Python)' }).getAttribute('contenteditable')).toBe(
      'false',
    );
    const overflow = await page.evaluate(() => {
      const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
        .document;
      return root.documentElement.scrollWidth;
    });
    expect(overflow).toBeLessThanOrEqual(390);
    await shot(page, 'taps-viewer-phone');
    await page.context().close();
  });
});
