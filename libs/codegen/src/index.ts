export { CodegenModule } from './codegen.module';
export { CodegenService } from './codegen.service';
export { instructionOf, scriptColumns } from './codegen.types';
export type { CodegenEntry, CodegenListener, JobLanded, ScriptChange, VersionItem } from './codegen.types';
export { checkScript } from './script-checks';
export { CodegenErrorCode } from './codegen-errors';
export { CodegenTools } from './assistant-tools';
