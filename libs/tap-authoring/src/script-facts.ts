import { FunctionSignature, scriptFactsOf } from '@tapyard/sandbox';

/** The facts of a tap script that its checks read (see PythonScriptFacts in the sandbox). */
export interface ScriptFacts {
  syntaxError: string | null;
  /** The top-level fetch() a tap must define. */
  fetch: FunctionSignature | null;
  imports: string[];
  /** Top-level modules that are not in the standard library. */
  thirdParty: string[];
  relativeImports: boolean;
  /** exec / eval / compile / __import__ / importlib.import_module, called or named. */
  dynamicCode: string[];
  /** Environment variables read by literal name. */
  envReads: string[];
  dynamicEnv: boolean;
  raiseForStatus: number;
  retry: boolean;
  retryNames: string[];
}

/** The script's facts from Python's own parser (see pythonFacts: isolated, bounded, nothing run). */
export async function scriptFacts(python: string, script: string): Promise<ScriptFacts> {
  const r = await scriptFactsOf(python, script);
  if ('problem' in r) return empty(r.problem);
  const f = r.facts;
  if (f.syntaxError) return empty(f.syntaxError);
  return {
    syntaxError: null,
    fetch: f.functions.fetch ?? null,
    imports: f.imports,
    thirdParty: f.thirdParty,
    relativeImports: f.relativeImports,
    dynamicCode: f.dynamicCode,
    envReads: f.envReads,
    dynamicEnv: f.dynamicEnv,
    raiseForStatus: f.raiseForStatus,
    retry: f.retry,
    retryNames: f.retryNames,
  };
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
