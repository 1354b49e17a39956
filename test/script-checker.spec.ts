import { checkScript } from '@tapyard/codegen';
import { loadConfig } from '@tapyard/core';
import { scriptFactsOf } from '@tapyard/sandbox';
import { generatedScriptProblems, scriptFacts } from '@tapyard/tap-authoring';
import { testEnv } from './support/env';

/**
 * One checker (python/script_facts.py) reads tap scripts and CodeGen scripts alike; where the two
 * checkers it replaces differed, it keeps the stricter rule, so a way of hiding a call that one of
 * them saw is now seen for both kinds.
 */
describe('script facts: one checker for taps and CodeGen scripts', () => {
  const python = loadConfig(testEnv()).taps.python;
  const tap = (body: string): string =>
    `import os\n\ndef fetch():\n    limit = os.environ.get("SERVICE_TAP_TEST_LIMIT")\n${body}\n    yield {}\n`;
  const tapProblems = async (script: string): Promise<string> =>
    generatedScriptProblems(script, await scriptFacts(python, script), {
      packages: [],
      secretFields: {},
      tapType: 'structured',
    }).join(' ');

  it('a tap fetch() takes no arguments, or only the state of an incremental tap', async () => {
    const withSignature = (signature: string): string =>
      `import os\n\ndef fetch(${signature}):\n    limit = os.environ.get("SERVICE_TAP_TEST_LIMIT")\n    yield {}\n`;
    for (const ok of ['', 'state', 'state=None', '*, state', 'state, page=1'])
      expect(await tapProblems(withSignature(ok))).toBe('');
    for (const bad of ['cursor', 'state, cursor', 'page, state', '*, key'])
      expect(await tapProblems(withSignature(bad))).toMatch(
        /fetch\(\) must take no arguments, or only `state`/,
      );
  });

  it('reports every fact both kinds read from one parse', async () => {
    const r = await scriptFactsOf(
      python,
      [
        'import os.path',
        'from requests.adapters import HTTPAdapter',
        'OUTPUT_COLUMNS = {"total": "double"}',
        'def fetch(a, b=1, *rest, key, **more):',
        '    return os.environ["TOKEN"], os.getenv(a), ().__class__',
        '',
      ].join('\n'),
    );
    if ('problem' in r) throw new Error(r.problem);
    expect(r.facts).toMatchObject({
      syntaxError: null,
      functions: {
        fetch: { async: false, args: ['a', 'b'], kwonly: ['key'], vararg: true, kwarg: true, defaults: 1 },
      },
      modules: ['os.path', 'requests.adapters'],
      imports: ['os', 'requests'],
      thirdParty: ['requests'],
      dunder: ['__class__'],
      outputColumns: [['total', 'double']],
      envReads: ['TOKEN'],
      dynamicEnv: true,
      retry: true,
    });
  });

  it('a tap may not reach dynamic code through builtins or under another name (the CodeGen rule)', async () => {
    expect(await tapProblems(tap(''))).toBe('');
    for (const [body, named] of [
      ['    import builtins\n    builtins.exec("x = 1")', 'builtins.exec'],
      ['    run = eval\n    run("1")', 'eval'],
      ['    __builtins__.compile("1", "f", "eval")', '__builtins__.compile'],
    ]) {
      expect(await tapProblems(tap(body))).toContain(`it calls ${named}`);
    }
  });

  it('a CodeGen script may not import dynamically (the tap rule), besides its own refusals', async () => {
    const columns = [{ name: 'id', type: 'int' as const }];
    const problems = async (script: string): Promise<string> =>
      (await checkScript(python, 'dataQuality', script, columns)).problems.join(' ');
    expect(await problems('def check(rows):\n    return [None for r in rows]\n')).toBe('');
    expect(await problems('def check(rows):\n    return builtins.__import__("os") and []\n')).toContain(
      'builtins.__import__',
    );
    expect(await problems('def check(rows):\n    return [getattr(r, "x") for r in rows]\n')).toContain(
      'getattr',
    );
  });
});
