export { CodegenModule } from './codegen.module';
export { CodegenService, instructionOf, scriptColumns } from './codegen.service';
export type { CodegenEntry, CodegenListener, JobLanded, ScriptChange, VersionItem } from './codegen.service';
export { CODEGEN_KINDS, CONTRACT_VERSION, contractText, fingerprint, isCodegenKind } from './script-contract';
export type { CodegenKind } from './script-contract';
export { RunningScript } from './script-runner';
export type { ScriptRunSpec } from './script-runner';
export { checkScript } from './script-checks';
