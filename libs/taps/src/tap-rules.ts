import { ValidationError } from '@tapyard/core';
import { PipelineDefinition } from '@tapyard/model';
import { isAccessSecret } from '@tapyard/secrets';
import { TapErrorCode } from './tap-errors';

/**
 * Spec rule 1: a document tap may only feed a pipeline that accepts documents. Returns the violation,
 * or null.
 */
export function documentViolation(pipeline: string, def: PipelineDefinition | null): string | null {
  if (!def) return `document tap's target pipeline '${pipeline}' does not exist`;
  const problems: string[] = [];
  if (!def.source.fileAttributes.unstructuredAttributes)
    problems.push('source.fileAttributes.unstructuredAttributes is null');
  if (!def.destination.vectorStore)
    problems.push('it has no vector-store destination (qdrant, pgvector, weaviate, milvus or chroma)');
  return problems.length === 0
    ? null
    : `pipeline '${pipeline}' cannot take a document tap: ${problems.join(' and ')}`;
}

/** Tap scripts get their secret's values: the platform's access state is never one of them. */
export function assertTapSecret(secretName: string): void {
  if (isAccessSecret(secretName)) {
    throw new ValidationError(
      `secret '${secretName}' holds the platform's access state and cannot be given to a tap`,
      [{ field: 'secretName', problem: 'is managed by the platform' }],
    ).coded(TapErrorCode.SecretRefused);
  }
}
