import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * scripts/test (`npm test`) as a script: its steps are stand-ins in a scratch copy (the checks, the build,
 * `scripts/services` and Jest), so what is checked is the order and the counting, not the project.
 */
describe('npm test (scripts/test)', () => {
  const root = join(__dirname, '..');
  let dir: string;

  /** Writes an executable stand-in. */
  const stub = (path: string, text: string) => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
    chmodSync(join(dir, path), 0o755);
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tapyard-npm-test-'));
    mkdirSync(join(dir, 'scripts', 'lib'), { recursive: true });
    copyFileSync(join(root, 'scripts', 'test'), join(dir, 'scripts', 'test'));
    copyFileSync(join(root, 'scripts', 'lib', 'node.sh'), join(dir, 'scripts', 'lib', 'node.sh'));
    writeFileSync(join(dir, 'package-lock.json'), '{}\n');
    // The build marks its end: the unit run must not begin before it (it would take the cores from it).
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ scripts: { build: 'bash build.sh' } }));
    stub('build.sh', 'nice >build-niceness; sleep 1; touch built\n');
    for (const tool of ['eslint', 'prettier', 'tsc'])
      stub(`node_modules/.bin/${tool}`, '#!/bin/sh\nexit 0\n');
    // Each Jest run says which project it ran and writes its report: unit 3 passed, e2e 5 passed and 1 failed.
    stub(
      'node_modules/.bin/jest',
      `#!/usr/bin/env bash
out=; project=all; prev=
for a in "$@"; do
  case $a in --outputFile=*) out=\${a#--outputFile=};; esac
  [ "$prev" = --selectProjects ] && project=$a
  prev=$a
done
echo "$project $*" >>runs
case $project in
  unit) [ -e built ] || echo "the unit run began beside the build" >>runs; echo '{"numPassedTests":3,"numFailedTests":0,"testResults":[]}' >"$out";;
  *) touch e2e-began; echo '{"numPassedTests":5,"numFailedTests":1,"testResults":[]}' >"$out";;
esac
`,
    );
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs scripts/test with `services` as scripts/services; resolves with its exit code and output. */
  const npmTest = (services: string, ...args: string[]) => {
    stub('scripts/services', services);
    return new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn('bash', ['scripts/test', ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });
  };
  const runs = () =>
    existsSync(join(dir, 'runs')) ? readFileSync(join(dir, 'runs'), 'utf8').trim().split('\n') : [];

  it('runs the unit project and the e2e project once the build has ended, and counts both', async () => {
    const { code, out } = await npmTest('#!/bin/sh\nexit 0\n', 'some/path');
    const lines = runs();
    // Both begin once the build has ended, in either order; nothing else was written.
    expect(lines.map((l) => l.split(' ')[0]).sort()).toEqual(['e2e', 'unit']);
    // What was asked of `npm test` goes to both runs.
    for (const line of lines) expect(line).toMatch(/ some\/path$/);
    // The two static checks, the unit run's 3 and the e2e run's 5 passed and 1 failed.
    expect(out.trim().split('\n').pop()).toBe('10 passed, 1 failed');
    expect(code).toBe(1);
  });

  it('starts the e2e project once the build and the peers are up, beside the static checks, and counts them after it', async () => {
    // The lint and the type check end only once the e2e run has begun (else they give up after 60 s,
    // failing): the e2e run waits for neither, whatever the machine's speed.
    const afterE2e = (what: string) =>
      `#!/bin/sh\nnice >>niceness\nfor i in $(seq 600); do [ -e e2e-began ] && exit 0; sleep 0.1; done\necho "${what}"; exit 1\n`;
    stub('node_modules/.bin/tsc', afterE2e('the e2e run waited for the type check'));
    stub('node_modules/.bin/eslint', afterE2e('the e2e run waited for the lint'));
    const { code, out } = await npmTest('#!/bin/sh\nexit 0\n');
    expect(out).not.toMatch(/waited for/);
    expect(
      runs()
        .map((l) => l.split(' ')[0])
        .sort(),
    ).toEqual(['e2e', 'unit']);
    // Each step's header says when it ran, in seconds since the start; the checks' come after the e2e run.
    const headers = out.split('\n').filter((l) => l.startsWith('==> '));
    expect(headers).toEqual([
      expect.stringMatching(/^==> build \(\d+-\d+ s\)$/),
      expect.stringMatching(/^==> local services \(\d+-\d+ s\)$/),
      expect.stringMatching(/^==> jest \(e2e project\) \(from \d+ s\)$/),
      expect.stringMatching(/^==> jest \(e2e project\) ended \(\d+-\d+ s\)$/),
      expect.stringMatching(/^==> lint \(eslint \+ prettier\) \(\d+-\d+ s\)$/),
      expect.stringMatching(/^==> type check \(\d+-\d+ s\)$/),
      expect.stringMatching(/^==> jest \(unit project\) \(\d+-\d+ s\)$/),
    ]);
    // The checks give way to the build and the e2e run; the build's niceness is the caller's.
    const base = Number(execFileSync('nice', { encoding: 'utf8' }));
    expect(readFileSync(join(dir, 'niceness'), 'utf8').trim().split('\n')).toEqual([
      `${base + 10}`,
      `${base + 10}`,
    ]);
    expect(readFileSync(join(dir, 'build-niceness'), 'utf8').trim()).toBe(`${base}`);
    expect(out.trim().split('\n').pop()).toBe('10 passed, 1 failed');
    expect(code).toBe(1);
  });

  it('without the core services the unit project is not run, and that is counted as a failure', async () => {
    // The core peers (`scripts/services up`) fail; the optional ones would start.
    const { code, out } = await npmTest(
      '#!/bin/sh\n[ -n "$2" ] || { touch services-failed; exit 1; }\nexit 0\n',
    );
    expect(runs()).toEqual([]);
    expect(out).toMatch(/FAILED: scripts\/services up/);
    expect(out).toMatch(/not run: the core services did not start/);
    // The two checks pass; the services and the unit run that could not be made fail.
    expect(out.trim().split('\n').pop()).toBe('2 passed, 2 failed');
    expect(code).toBe(1);
  });
});
