import { existsSync, mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser, Page, chromium } from 'playwright-core';
import { TestApi, startApi } from './apps';

/**
 * What every browser test of the console shares: Debian's chromium driven by playwright-core against the real
 * API serving the built console (`npm run build` makes dist/console). Each console test file opens one browser
 * (`openBrowser`) and gives each test its own context (cookies, session storage).
 */
const ROOT = join(__dirname, '..', '..');
export const CONSOLE_DIR = join(ROOT, 'dist', 'console');
const ARTIFACTS = join(ROOT, '.artifacts', 'console');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

/** Why this machine cannot run the console's browser tests, or null when it can. */
export const consoleMissing: string | null = !CHROMIUM
  ? 'chromium is not installed (scripts/services up chromium)'
  : !existsSync(join(CONSOLE_DIR, 'index.html'))
    ? 'the console is not built (npm run build)'
    : null;

/** `describe`, or `describe.skip` with the reason printed when the browser or the built console is missing. */
export function consoleDescribe(file: string): jest.Describe {
  if (consoleMissing) console.log(`${file} skipped: ${consoleMissing}`);
  return consoleMissing ? describe.skip : describe;
}

export interface Served {
  api: TestApi;
  url: string;
}

/** The API with the console, listening on a loopback port a browser can open. */
export async function serve(overrides: Record<string, string>): Promise<Served> {
  const api = await startApi({ CONSOLE_DIR, ...overrides });
  await api.app.listen(0, '127.0.0.1');
  const { port } = api.app.getHttpServer().address() as AddressInfo;
  return { api, url: `http://127.0.0.1:${port}` };
}

export function openBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** A page in a context of its own (fresh cookies and storage), `width` px wide. */
export async function newPage(browser: Browser, url: string, width = 1280): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

/** The login form of USE_USER_AUTH=true, filled and sent; resolves once the console shows who signed in. */
export async function logIn(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('identity').waitFor();
}

/** A full-page screenshot as a test artefact (.artifacts/console/<name>.png, gitignored). */
export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
