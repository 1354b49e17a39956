import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The lint rule that keeps libs apart: another lib is reached through `@tapyard/<lib>` only. */
describe('lib boundaries (eslint)', () => {
  const root = join(__dirname, '..');
  const cases = {
    intoLib: ["export { x } from '../../pipelines/src/pipeline.types';\n", 'libs/ingestion/src/a.ts'],
    intoLibFromSubfolder: [
      "export { x } from '../../../model/src/errors';\n",
      'libs/ingestion/src/stage-thread/a.ts',
    ],
    intoLibFromApp: ["export { x } from '../../../libs/core/src/index';\n", 'apps/api/src/a.ts'],
    ownFile: ["export { x } from '../row-plan';\n", 'libs/ingestion/src/stage-thread/a.ts'],
    barrel: ["export { x } from '@tapyard/model';\n", 'libs/ingestion/src/a.ts'],
  } satisfies Record<string, [code: string, file: string]>;
  let problems: Record<keyof typeof cases, string[]>;

  /**
   * The rule's findings for each case as if its code were that file. ESLint runs in a process of its
   * own (its config is ESM, which Jest's module loader does not load), one for all the cases: each
   * process start costs more than the linting.
   */
  beforeAll(() => {
    const script = `
      const { ESLint } = require('eslint');
      (async () => {
        const cases = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
        const eslint = new ESLint({ overrideConfig: { rules: { '@typescript-eslint/no-unused-vars': 'off' } } });
        const found = {};
        for (const [name, [code, filePath]] of Object.entries(cases)) {
          const [result] = await eslint.lintText(code, { filePath });
          found[name] = result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
        }
        process.stdout.write(JSON.stringify(found));
      })();`;
    const input = Object.fromEntries(
      Object.entries(cases).map(([name, [code, file]]) => [name, [code, join(root, file)]]),
    );
    const run = spawnSync(process.execPath, ['-e', script], {
      cwd: root,
      input: JSON.stringify(input),
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (run.status !== 0) throw new Error(`eslint failed: ${run.stderr}`);
    problems = JSON.parse(run.stdout) as typeof problems;
  });

  it('refuses a relative path into another lib, from a lib or an app', () => {
    expect(problems.intoLib).toHaveLength(1);
    expect(problems.intoLibFromSubfolder).toHaveLength(1);
    expect(problems.intoLibFromApp).toHaveLength(1);
  });

  it('lets a lib use its own files and other libs through their barrels', () => {
    expect(problems.ownFile).toEqual([]);
    expect(problems.barrel).toEqual([]);
  });
});
