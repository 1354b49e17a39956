export { CodegenModule } from './codegen.module';
export { CodegenService } from './codegen.service';
export { instructionOf, scriptColumns } from './codegen.types';
export type { CodegenEntry, CodegenListener, JobLanded, ScriptChange, VersionItem } from './codegen.types';
export { CODEGEN_KINDS, CONTRACT_VERSION, contractText, fingerprint, isCodegenKind } from './script-contract';
export type { CodegenKind } from './script-contract';
export { RunningScript, failureWithoutValues } from './script-runner';
export type { ScriptRunSpec } from './script-runner';
export { checkScript } from './script-checks';
