export * from './tap-authoring.service';
export * from './tap-authoring.module';
export * from './prompt-fragments/prompt-fragment';
export * from './prompt-fragments/prompt-fragments.service';
export { INJECTED_VARS, PLATFORM_VARS } from './prompts';
export { generatedScriptProblems, preservationProblems } from './script-checks';
export { scriptFacts } from './script-facts';
export type { ScriptFacts } from './script-facts';
export { logSignals } from './log-signals';
