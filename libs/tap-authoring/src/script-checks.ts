import { ScriptFacts } from './script-facts';
import { importableModules } from './import-names';

export const TEST_LIMIT_VAR = 'SERVICE_TAP_TEST_LIMIT';

/** Modules a document tap has no use for: chunking, embedding and vector stores are the platform's. */
const DOCUMENT_TAP_FORBIDDEN = new Set([
  'sentence_transformers',
  'langchain',
  'langchain_text_splitters',
  'langchain_community',
  'llama_index',
  'tiktoken',
  'openai',
  'chromadb',
  'qdrant_client',
  'pymilvus',
  'weaviate',
  'pgvector',
  'transformers',
]);

export interface GeneratedScriptContext {
  packages: readonly string[];
  /** The tap secret's fields: names may be read, values must never appear in the text. */
  secretFields: Record<string, string>;
  tapType: 'structured' | 'document';
}

/** Values too short to mean anything are not looked for (a field `region: eu` would match anything). */
const MIN_SECRET_CHARS = 4;

/**
 * Why a generated script may not be stored (empty when it may): it parses as Python 3, defines a
 * fetch() callable without arguments or with the state alone, honours the test limit, reads its secret from the environment
 * and never inlines a value of it, and imports only the standard library and declared packages.
 * Problems never quote a secret value.
 */
export function generatedScriptProblems(
  script: string,
  facts: ScriptFacts,
  ctx: GeneratedScriptContext,
): string[] {
  if (facts.syntaxError) return [`it does not parse as Python 3 (${facts.syntaxError})`];
  const problems: string[] = [];
  if (!facts.fetch) problems.push('it does not define a top-level fetch() function');
  else if (!callableByHarness(facts.fetch)) {
    problems.push('fetch() must take no arguments, or only `state` (incremental taps)');
  }
  if (!facts.envReads.includes(TEST_LIMIT_VAR)) {
    problems.push(`it does not read ${TEST_LIMIT_VAR} from the environment to cap reads in tests`);
  }
  for (const [field, value] of Object.entries(ctx.secretFields)) {
    if (value.length >= MIN_SECRET_CHARS && script.includes(value)) {
      problems.push(
        `it contains the value of secret field '${field}' inline; read it with os.environ["${field}"]`,
      );
    }
  }
  const fields = Object.keys(ctx.secretFields);
  if (fields.length > 0 && !facts.dynamicEnv && !fields.some((f) => facts.envReads.includes(f))) {
    problems.push(`it reads none of its secret's fields (${fields.join(', ')}) from the environment`);
  }
  const allowed = importableModules(ctx.packages);
  const undeclared = facts.thirdParty.filter((m) => !allowed.has(m) && !allowed.has(m.toLowerCase()));
  if (undeclared.length > 0) {
    problems.push(
      `it imports ${undeclared.join(', ')}, which ${undeclared.length === 1 ? 'is' : 'are'} neither in the ` +
        'standard library nor among the declared packages',
    );
  }
  if (facts.relativeImports) problems.push('it uses a relative import; a tap is a single file');
  if (facts.dynamicCode.length > 0) {
    problems.push(`it calls ${facts.dynamicCode.join(', ')}, which hides what it imports or runs`);
  }
  if (ctx.tapType === 'document') {
    const forbidden = facts.imports.filter((m) => DOCUMENT_TAP_FORBIDDEN.has(m));
    if (forbidden.length > 0) {
      problems.push(
        `a document tap only fetches documents; it imports ${forbidden.join(', ')} (chunking, embedding and ` +
          'vector stores are done by the platform)',
      );
    }
  }
  return problems;
}

/**
 * What an optimised script lost of the original's promises (spec rule 5), from both syntax trees:
 * the fetch() signature, the test-limit handling, every environment read, retry/back-off, and
 * status-raising calls.
 */
export function preservationProblems(before: ScriptFacts, after: ScriptFacts): string[] {
  if (after.syntaxError) return [`it does not parse as Python 3 (${after.syntaxError})`];
  const problems: string[] = [];
  const sig = (f: ScriptFacts['fetch']): string =>
    f ? JSON.stringify([f.async, f.args, f.kwonly, f.vararg, f.kwarg, f.defaults]) : 'none';
  if (sig(before.fetch) !== sig(after.fetch)) problems.push('it changed the fetch() signature');
  if (before.envReads.includes(TEST_LIMIT_VAR) && !after.envReads.includes(TEST_LIMIT_VAR)) {
    problems.push(`it dropped the ${TEST_LIMIT_VAR} handling`);
  }
  const lost = before.envReads.filter((v) => v !== TEST_LIMIT_VAR && !after.envReads.includes(v));
  if (lost.length > 0 && !after.dynamicEnv) {
    problems.push(`it no longer reads ${lost.join(', ')} from the environment`);
  }
  if (before.retry && !after.retry) problems.push('it removed the retry/back-off handling');
  if (before.raiseForStatus > 0 && after.raiseForStatus === 0) {
    problems.push('it removed the status-raising calls (raise_for_status)');
  }
  return problems;
}

/** The harness calls fetch() or, for incremental taps, fetch(state=...): nothing else may be required. */
function callableByHarness(fetch: NonNullable<ScriptFacts['fetch']>): boolean {
  const required = fetch.args.slice(0, fetch.args.length - fetch.defaults);
  const onlyState = (names: string[]): boolean => names.every((name) => name === 'state');
  return required.length <= 1 && onlyState(required) && onlyState(fetch.kwonly);
}
