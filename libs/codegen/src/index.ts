export { CodegenModule } from './codegen.module';
export { CodegenService, instructionOf, scriptColumns } from './codegen.service';
export type { CodegenEntry, VersionItem } from './codegen.service';
export { CODEGEN_KINDS, CONTRACT_VERSION, contractText, fingerprint, isCodegenKind } from './script-contract';
export type { CodegenKind } from './script-contract';
export type { ScriptRunSpec } from './script-runner';
export { checkScript } from './script-checks';
