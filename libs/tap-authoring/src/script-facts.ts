import { resolve } from 'node:path';
import { pythonFacts } from '@tapyard/sandbox';

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

/** The script's facts from Python's own parser (see pythonFacts: isolated, bounded, nothing run). */
export async function scriptFacts(python: string, script: string): Promise<ScriptFacts> {
  const r = await pythonFacts(python, FACTS_SCRIPT, script);
  if ('problem' in r) return empty(r.problem);
  const facts = r.facts as Partial<ScriptFacts>;
  return facts.syntaxError ? empty(facts.syntaxError) : (facts as ScriptFacts);
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
