import type { DomainCode } from '@tapyard/core';

/** The domain codes of CodeGen script errors: the error body's `code`. */
export const CodegenErrorCode = {
  /** A kind other than dataQuality or transformation. */
  UnknownKind: 'codegen.unknown_kind',
  /** The pipeline has no AI instruction of that kind. */
  NoInstruction: 'codegen.no_instruction',
  NotInRepository: 'codegen.not_in_repository',
  /** The live file is not on the repository's branch head. */
  NothingToPull: 'codegen.nothing_to_pull',
  VersionNotFound: 'codegen.version_not_found',
  /** Written for another script contract, instruction or source schema. */
  VersionMismatch: 'codegen.version_mismatch',
  /** The script does not meet the script contract's static checks. */
  ChecksFailed: 'codegen.checks_failed',
  /** The repository file was edited since the recorded commit; nothing was committed. */
  RepositoryEdited: 'codegen.repository_edited',
  /** The script could not be stored; the current one is unchanged. */
  NotStored: 'codegen.not_stored',
} as const satisfies Record<string, DomainCode>;
