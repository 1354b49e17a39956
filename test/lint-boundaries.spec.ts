import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The lint rule that keeps libs apart: another lib is reached through `@tapyard/<lib>` only. */
describe('lib boundaries (eslint)', () => {
  const root = join(__dirname, '..');
  /** The rule's findings for `code` as if it were the file `file` (ESLint in a process of its own: its config is ESM). */
  const problems = (code: string, file: string): string[] => {
    const run = spawnSync(
      join(root, 'node_modules', '.bin', 'eslint'),
      [
        '--stdin',
        '--stdin-filename',
        join(root, file),
        '--format',
        'json',
        '--rule',
        '{"@typescript-eslint/no-unused-vars":"off"}',
      ],
      { cwd: root, input: code, encoding: 'utf8', timeout: 60_000 },
    );
    const [result] = JSON.parse(run.stdout) as { messages: { ruleId: string | null; message: string }[] }[];
    return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  it('refuses a relative path into another lib, from a lib or an app', () => {
    expect(
      problems("export { x } from '../../pipelines/src/pipeline.types';\n", 'libs/ingestion/src/a.ts'),
    ).toHaveLength(1);
    expect(
      problems("export { x } from '../../../model/src/errors';\n", 'libs/ingestion/src/stage-thread/a.ts'),
    ).toHaveLength(1);
    expect(problems("export { x } from '../../../libs/core/src/index';\n", 'apps/api/src/a.ts')).toHaveLength(
      1,
    );
  });

  it('lets a lib use its own files and other libs through their barrels', () => {
    expect(problems("export { x } from '../row-plan';\n", 'libs/ingestion/src/stage-thread/a.ts')).toEqual(
      [],
    );
    expect(problems("export { x } from '@tapyard/model';\n", 'libs/ingestion/src/a.ts')).toEqual([]);
  });
});
