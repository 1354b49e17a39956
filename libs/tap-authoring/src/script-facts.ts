import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

/** What script_facts.py reports about a script's syntax tree. */
export interface ScriptFacts {
  syntaxError: string | null;
  fetch: {
    async: boolean;
    args: string[];
    kwonly: string[];
    vararg: boolean;
    kwarg: boolean;
    defaults: number;
  } | null;
  imports: string[];
  /** Top-level modules that are not in the standard library. */
  thirdParty: string[];
  relativeImports: boolean;
  /** exec / eval / compile / __import__ / importlib.import_module calls. */
  dynamicCode: string[];
  /** Environment variables read by literal name. */
  envReads: string[];
  dynamicEnv: boolean;
  raiseForStatus: number;
  retry: boolean;
  retryNames: string[];
}

/** Ships beside the compiled code, like the sandbox's harness (see build in package.json). */
const FACTS_SCRIPT = resolve(__dirname, '..', 'python', 'script_facts.py');
const TIMEOUT_MS = 15_000;

/**
 * Parses a script with Python's own parser in a separate, isolated interpreter (`-I`: no user site,
 * no environment, nothing of the script run or imported) bounded in time and output.
 */
export function scriptFacts(python: string, script: string): Promise<ScriptFacts> {
  return new Promise((done, fail) => {
    const child = spawn(python, ['-I', FACTS_SCRIPT], {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS,
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      if (out.length < 1_000_000) out += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      if (err.length < 10_000) err += c;
    });
    child.on('error', fail);
    child.on('close', (code, signal) => {
      if (code !== 0) {
        const why = signal ? `was stopped (${signal})` : `failed: ${err.trim().split('\n').pop() ?? ''}`;
        // Only a script too hostile to parse within the bound gets here; it is not a usable script.
        done(empty(`the script could not be checked: the parser ${why}`));
        return;
      }
      try {
        const facts = JSON.parse(out) as Partial<ScriptFacts>;
        done(facts.syntaxError ? empty(facts.syntaxError) : (facts as ScriptFacts));
      } catch {
        done(empty('the script could not be checked: the parser gave no answer'));
      }
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(script);
  });
}

function empty(syntaxError: string): ScriptFacts {
  return {
    syntaxError,
    fetch: null,
    imports: [],
    thirdParty: [],
    relativeImports: false,
    dynamicCode: [],
    envReads: [],
    dynamicEnv: false,
    raiseForStatus: 0,
    retry: false,
    retryNames: [],
  };
}
