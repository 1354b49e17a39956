import fc from 'fast-check';
import { loadConfig } from '@tapyard/core';
import { generatedScriptProblems, scriptFacts } from '@tapyard/tap-authoring';
import { testEnv } from '../support/env';
import { FUZZ_TEST_TIMEOUT, fuzzParameters } from './support/fuzz-options';

/**
 * The script checker (CPython's own parser in an isolated interpreter) on inputs nobody wrote:
 * hostile text ends within the bound with an answer, and for generated scripts the facts it reports
 * (environment reads, imports, fetch()) are exactly what the generator put in.
 */
describe('script facts fuzz (CPython ast, generated scripts as the oracle)', () => {
  const python = loadConfig(testEnv()).taps.python;

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
        'fetch',
        'import',
        'os',
        '"',
        "'",
        '\\',
        '#',
        'é',
        '\0',
        'lambda',
        '*',
        '=',
      );
      await fc.assert(
        fc.asyncProperty(fc.string({ unit, maxLength: 400 }), async (text) => {
          const started = Date.now();
          const facts = await scriptFacts(python, text);
          expect(Date.now() - started).toBeLessThan(16_000);
          expect(typeof facts.syntaxError === 'string' || Array.isArray(facts.envReads)).toBe(true);
          if (!facts.syntaxError) expect(Array.isArray(facts.imports)).toBe(true);
        }),
        fuzzParameters(40),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it(
    'generated scripts: env reads, imports and fetch() reported exactly; inlined secret values always caught',
    async () => {
      const ident = fc.stringMatching(/^[A-Z][A-Z0-9_]{0,12}$/);
      const module = fc.constantFrom(
        'json',
        'csv',
        'requests',
        'yaml',
        'bs4',
        'urllib.parse',
        'xml.etree.ElementTree',
        'pandas',
      );
      const read = fc.tuple(ident, fc.constantFrom('get', 'getenv', 'index', 'from'));
      await fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(read, { maxLength: 5, selector: (r) => r[0] }),
          fc.uniqueArray(module, { maxLength: 4 }),
          fc.boolean(),
          fc.string({ minLength: 8, maxLength: 20, unit: fc.constantFrom('a', 'Z', '9', '_', '-') }),
          async (reads, modules, withFetch, secret) => {
            const lines = ['import os', ...modules.map((m) => `import ${m}`)];
            if (reads.some((r) => r[1] === 'from')) lines.push('from os import environ as ENV');
            const body = reads.map(([name, how], i) =>
              how === 'get'
                ? `    v${i} = os.environ.get("${name}")`
                : how === 'getenv'
                  ? `    v${i} = os.getenv('${name}', "x")`
                  : how === 'index'
                    ? `    v${i} = os.environ["${name}"]`
                    : `    v${i} = ENV.get("${name}")`,
            );
            const script = [
              ...lines,
              `${withFetch ? 'def fetch():' : 'def other():'}`,
              ...body,
              `    token = "${secret}"`,
              '    yield {}',
              '',
            ].join('\n');
            const facts = await scriptFacts(python, script);
            expect(facts.syntaxError).toBeNull();
            expect(facts.envReads).toEqual([...new Set(reads.map((r) => r[0]))].sort());
            expect(facts.imports).toEqual(
              [...new Set(['os', ...modules.map((m) => m.split('.')[0])])].sort(),
            );
            expect(facts.fetch !== null).toBe(withFetch);
            const problems = generatedScriptProblems(script, facts, {
              packages: [],
              secretFields: { TOKEN: secret },
              tapType: 'structured',
            });
            expect(problems.some((p) => p.includes("secret field 'TOKEN' inline"))).toBe(true);
            expect(problems.join(' ')).not.toContain(secret);
            const thirdParty = modules
              .map((m) => m.split('.')[0])
              .filter((m) => ['requests', 'yaml', 'bs4', 'pandas'].includes(m));
            for (const m of thirdParty)
              expect(problems.some((p) => p.includes(`imports`) && p.includes(m))).toBe(true);
          },
        ),
        fuzzParameters(30),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );
});
