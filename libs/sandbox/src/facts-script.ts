import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

const TIMEOUT_MS = 15_000;
const MAX_OUTPUT = 1_000_000;

/** Ships beside the compiled code, like the harness (see harness-path.ts and scripts/build). */
const SCRIPT_FACTS_PATH = resolve(__dirname, '..', 'python', 'script_facts.py');

/** A top-level function's parameters. */
export interface FunctionSignature {
  async: boolean;
  /** Positional parameters, positional-only ones included. */
  args: string[];
  kwonly: string[];
  vararg: boolean;
  kwarg: boolean;
  /** How many of `args` have a default. */
  defaults: number;
}

/**
 * What python/script_facts.py reports about a script's syntax tree; every other field is set only when
 * `syntaxError` is null. One checker for every kind of script: each caller applies its own contract.
 */
export interface PythonScriptFacts {
  syntaxError: string | null;
  functions: Record<string, FunctionSignature>;
  /** Imported modules as written (`os.path`). */
  modules: string[];
  /** Their top-level packages (`os`). */
  imports: string[];
  /** Top-level packages that are not in the standard library. */
  thirdParty: string[];
  relativeImports: boolean;
  /** exec / eval / compile / __import__ / importlib.import_module, called or named. */
  dynamicCode: string[];
  /** Builtins that reach outside a script's values (dynamic code, open, getattr...), called or named. */
  risky: string[];
  /** Dunder attributes read, but for __name__ and __doc__. */
  dunder: string[];
  /** A top-level OUTPUT_COLUMNS literal dict as [name, type] pairs, null when absent or unreadable. */
  outputColumns: [string, string][] | null;
  outputProblem: string | null;
  /** Environment variables read by literal name. */
  envReads: string[];
  /** An environment variable read by a computed name. */
  dynamicEnv: boolean;
  raiseForStatus: number;
  retry: boolean;
  retryNames: string[];
}

/** The facts of a script (see pythonFacts), or the reason there are none. */
export async function scriptFactsOf(
  python: string,
  script: string,
): Promise<{ facts: PythonScriptFacts } | { problem: string }> {
  const r = await pythonFacts(python, script);
  return 'problem' in r ? r : { facts: r.facts as unknown as PythonScriptFacts };
}

/**
 * Runs python/script_facts.py, which reads a user's source on stdin and prints one JSON object of
 * facts about its syntax tree. The interpreter is isolated (`-I`: no user site, no environment) and
 * bounded in time and output; nothing of the source is run or imported. Resolves with the parsed
 * object, or with the reason there is none (a source too hostile to parse within the bound).
 */
function pythonFacts(
  python: string,
  source: string,
): Promise<{ facts: Record<string, unknown> } | { problem: string }> {
  return new Promise((done, fail) => {
    const child = spawn(python, ['-I', SCRIPT_FACTS_PATH], {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS,
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      if (out.length < MAX_OUTPUT) out += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      if (err.length < 10_000) err += c;
    });
    child.on('error', fail);
    child.on('close', (code, signal) => {
      if (code !== 0) {
        const why = signal ? `was stopped (${signal})` : `failed: ${err.trim().split('\n').pop() ?? ''}`;
        done({ problem: `the script could not be checked: the parser ${why}` });
        return;
      }
      try {
        const facts = JSON.parse(out) as unknown;
        if (typeof facts === 'object' && facts !== null && !Array.isArray(facts))
          done({ facts: facts as Record<string, unknown> });
        else done({ problem: 'the script could not be checked: the parser gave no answer' });
      } catch {
        done({ problem: 'the script could not be checked: the parser gave no answer' });
      }
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(source);
  });
}
