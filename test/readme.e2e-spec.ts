import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, resolve } from 'node:path';
import { promisify } from 'node:util';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, testEnv, uniqueEnvironment } from './support/env';
import { closedPort } from './support/net';
import { Spawned, spawnApp } from './support/processes';

/**
 * The README is the front door: every command block in it runs here, as written, against a real
 * API and worker (the host and port, and the sample's name, made this run's own), and each answer
 * shown under a command carries the fields the README shows. Links between the README and docs/
 * resolve to files and headings that exist.
 */

const ROOT = resolve(__dirname, '..');
const run = promisify(execFile);

interface Block {
  lang: string;
  text: string;
}

function codeBlocks(markdown: string): Block[] {
  const out: Block[] = [];
  const re = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (let m = re.exec(markdown); m !== null; m = re.exec(markdown)) out.push({ lang: m[1], text: m[2] });
  return out;
}

/** A block cut into commands, each with the answer the README shows under it (comment lines). */
function steps(block: string): { command: string; shown: string }[] {
  const out: { command: string; shown: string }[] = [];
  let command: string[] = [];
  let shown: string[] = [];
  const flush = () => {
    if (command.length > 0) out.push({ command: command.join('\n'), shown: shown.join('\n') });
    command = [];
    shown = [];
  };
  for (const line of block.split('\n')) {
    if (line.trim() === '') continue;
    // An answer is a comment that starts with JSON; any other comment is prose.
    if (/^#\s*[{"]/.test(line)) {
      shown.push(line.replace(/^#\s*/, ''));
      continue;
    }
    if (line.startsWith('#')) continue;
    if (shown.length > 0 || (command.length > 0 && !command[command.length - 1].endsWith('\\'))) flush();
    command.push(line);
  }
  flush();
  return out;
}

/** Heading anchors as GitHub makes them. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const prose = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  for (const m of prose.matchAll(/^#+ (.*)$/gm)) {
    out.add(
      m[1]
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    );
  }
  return out;
}

describe('the README, run as written', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = codeBlocks(readme).filter((b) => b.lang === 'bash');

  it('is a front door: short, with the two commands, and every link resolves', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    const docs = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const broken: string[] = [];
    for (const file of docs) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^https?:/.test(target)) continue;
        const [path, anchor] = target.split('#');
        const resolved = path ? normalize(join(dirname(join(ROOT, file)), path)) : join(ROOT, file);
        if (!existsSync(resolved)) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor))
          broken.push(`${file}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the two commands are what CI runs and what package.json defines', () => {
    const two = blocks.find((b) => b.text.includes('npm ci'));
    expect(two?.text).toMatch(/^npm ci && npm run up\b/m);
    expect(two?.text).toMatch(/^npm test\b/m);
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    expect(ci.split('\n').filter((l) => /^npm /.test(l))).toEqual(['npm ci', 'npm test']);
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.up).toBeDefined();
    expect(scripts.test).toBeDefined();
  });

  describe('the sessions it shows, against a real API and worker', () => {
    const env = uniqueEnvironment('readme');
    const sample = `sales_${env.replace(/[^a-z0-9]/g, '').slice(-10)}`;
    let api: Spawned;
    let worker: Spawned;
    let port: number;
    let dir: string;

    beforeAll(async () => {
      port = await closedPort();
      const flags = { TAPYARD_ENV: env, ...TEST_OBJECT_STORE };
      api = spawnApp('api', testEnv({ ...flags, PORT: String(port), HOST: '127.0.0.1' }));
      worker = spawnApp('worker', testEnv({ ...flags, WORKER_HTTP_PORT: '0' }));
      await Promise.all([api.waitFor(/Tapyard API listening/), worker.waitFor(/Tapyard worker ready/)]);
      dir = await mkdtemp(join(tmpdir(), 'tapyard-readme-'));
      // The README runs from a checkout: its scripts are reachable from the working directory.
      await symlink(join(ROOT, 'scripts'), join(dir, 'scripts'));
      const rows = ['id,region,amount,sold_on'];
      for (let i = 1; i <= 40; i++)
        rows.push(
          `${i},${['north', 'south'][i % 2]},${(i * 12.5).toFixed(2)},2026-11-${String((i % 28) + 1).padStart(2, '0')}`,
        );
      await writeFile(join(dir, `${sample}.csv`), `${rows.join('\n')}\n`);
    }, 180_000);

    afterAll(async () => {
      // The sample's pipeline and its tables go with the run.
      await fetch(`http://127.0.0.1:${port}/api/v1/pipeline?pipeline=${sample}&deleteData=true`, {
        method: 'DELETE',
      }).catch(() => undefined);
      api?.child.kill('SIGTERM');
      worker?.child.kill('SIGTERM');
      await Promise.all([api?.exited, worker?.exited]);
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const sessions = blocks.filter((b) => b.text.includes('curl'));

    it('has sessions to run', () => {
      expect(sessions.length).toBeGreaterThanOrEqual(2);
    });

    it.each(sessions.map((b, i) => [i, b.text] as const))(
      'session %i runs and answers as shown',
      async (_i, text) => {
        const own = text
          .replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${port}`)
          .replace(/\bsales(?![a-z0-9])/g, sample);
        const cut = steps(own);
        // Each command's output is fenced, so what it answered can be compared with what the README shows.
        const script = [
          'set -euo pipefail',
          ...cut.map((s, n) => `echo "@@${n}@@"\n${s.command}\necho`),
        ].join('\n');
        const { stdout } = await run('bash', ['-c', script], {
          cwd: dir,
          env: { ...process.env, DATABASE_URL: TEST_DATABASE_URL },
          timeout: 120_000,
          maxBuffer: 16 << 20,
        });
        const answers = stdout.split(/^@@\d+@@$/m).slice(1);
        expect(answers).toHaveLength(cut.length);
        cut.forEach((s, n) => {
          if (!s.shown) return;
          // The fields the README shows are in the answer (values differ: tokens, times, versions).
          const fields = [...s.shown.matchAll(/"(\w+)":/g)].map((m) => m[1]);
          const missing = fields.filter((f) => !answers[n].includes(`"${f}":`));
          expect({ command: s.command, missing }).toEqual({ command: s.command, missing: [] });
        });
      },
    );
  });
});
