import fc from 'fast-check';
import { loadConfig } from '@tapyard/core';
import { checkScript } from '@tapyard/codegen';
import { FIELD_TYPES } from '@tapyard/model';
import { testEnv } from '../support/env';
import { FUZZ_TEST_TIMEOUT, fuzzParameters } from './support/fuzz-options';

/**
 * The CodeGen script checks (CPython's parser in an isolated interpreter) on inputs nobody wrote:
 * hostile text gets an answer within the bound, and for generated scripts the verdict is exactly what
 * the generator put in (imports outside the allow-list, the entry point, the declared columns).
 */
describe('CodeGen script checks fuzz (CPython ast, generated scripts as the oracle)', () => {
  const python = loadConfig(testEnv()).taps.python;
  const columns = [
    { name: 'id', type: 'int' as const },
    { name: 'amount', type: 'double' as const },
  ];

  it(
    'any text: an answer within the bound, never a crash',
    async () => {
      const unit = fc.constantFrom(
        '(',
        ')',
        '[',
        ']',
        '{',
        '}',
        ':',
        '\n',
        ' ',
        'def',
        'check',
        'transform',
        'import',
        'OUTPUT_COLUMNS',
        '=',
        '"',
        "'",
        '\\',
        '#',
        'é',
        '\0',
        'lambda',
        '__class__',
        'rows',
      );
      await fc.assert(
        fc.asyncProperty(fc.string({ unit, maxLength: 400 }), fc.boolean(), async (text, dq) => {
          const started = Date.now();
          const r = await checkScript(python, dq ? 'dataQuality' : 'transformation', text, columns);
          expect(Date.now() - started).toBeLessThan(16_000);
          expect(Array.isArray(r.problems)).toBe(true);
          if (r.problems.length === 0) expect(text).toMatch(dq ? /def check/ : /def transform/);
        }),
        fuzzParameters(40),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it(
    'generated scripts: disallowed imports named, declared columns read back exactly',
    async () => {
      const allowed = fc.constantFrom('re', 'math', 'datetime', 'decimal', 'json', 'collections.abc');
      const banned = fc.constantFrom('socket', 'os', 'subprocess', 'urllib.request', 'requests', 'ctypes');
      const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/).filter((n) => n !== 'id' && n !== 'amount');
      await fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(allowed, { maxLength: 3 }),
          fc.uniqueArray(banned, { maxLength: 2 }),
          fc.uniqueArray(fc.tuple(name, fc.constantFrom(...FIELD_TYPES)), {
            maxLength: 3,
            selector: (t) => t[0],
          }),
          fc.boolean(),
          async (good, bad, added, fromImport) => {
            const imports = [...good, ...bad]
              .map((m) => (fromImport && m.includes('.') ? `from ${m} import *` : `import ${m}`))
              .join('\n');
            const declared = `{${added.map(([n, t]) => `"${n}": "${t}"`).join(', ')}}`;
            const script =
              `${imports}\n\nOUTPUT_COLUMNS = ${declared}\n\n` +
              `def transform(rows):\n    return [dict(r, ${added.map(([n]) => `${n}=None`).join(', ')}) for r in rows]\n`;
            const r = await checkScript(python, 'transformation', script, columns);
            const named = r.problems.join(' ');
            for (const m of bad) expect(named).toContain(m);
            for (const m of good) expect(named).not.toContain(`${m},`);
            if (bad.length === 0) {
              expect(r.problems).toEqual([]);
              expect(r.outputColumns).toEqual(added.map(([n, t]) => ({ name: n, type: t })));
            }
          },
        ),
        fuzzParameters(40),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it('refuses what a sandboxed script must not do, each with its reason', async () => {
    const cases: [string, string][] = [
      ['def check(rows):\n    return [open("/etc/passwd") for r in rows]\n', 'open'],
      ['def check(rows):\n    return [().__class__.__bases__ for r in rows]\n', 'dunder'],
      ['def check(rows):\n    return eval("[None]") * len(rows)\n', 'eval'],
      ['def check(rows):\n    return __builtins__["len"](rows) * [None]\n', '__builtins__'],
      ['async def check(rows):\n    return []\n', 'not async'],
      ['def check():\n    return []\n', 'exactly one argument'],
      ['def other(rows):\n    return []\n', 'does not define check(rows)'],
      ['from . import x\ndef check(rows):\n    return []\n', 'relative'],
      ['def check(rows)\n    return []\n', 'does not parse'],
      ['OUTPUT_COLUMNS = {"x": "int"}\ndef check(rows):\n    return []\n', 'remove OUTPUT_COLUMNS'],
    ];
    for (const [script, reason] of cases) {
      const r = await checkScript(python, 'dataQuality', script, columns);
      expect(r.problems.join(' ')).toContain(reason);
    }
    const tf = async (decl: string) =>
      (
        await checkScript(
          python,
          'transformation',
          `${decl}\ndef transform(rows):\n    return rows\n`,
          columns,
        )
      ).problems.join(' ');
    expect(await tf('')).toContain('does not declare OUTPUT_COLUMNS');
    expect(await tf('OUTPUT_COLUMNS = {"id": "int"}')).toContain('already a column');
    expect(await tf('OUTPUT_COLUMNS = {"x": "money"}')).toContain("unknown type 'money'");
    expect(await tf('OUTPUT_COLUMNS = {"bad name": "int"}')).toContain('a column name is');
    expect(await tf('OUTPUT_COLUMNS = dict(x="int")')).toContain('not a literal dict');
    expect(await tf('OUTPUT_COLUMNS = {}')).toBe('');
  });
});
