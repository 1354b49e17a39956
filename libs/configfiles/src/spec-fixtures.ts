/** Helpers of the JSON Schema specs (not built: tsconfig.build.json leaves spec-fixtures out). */
import { ValidationError } from '@tapyard/core';
import { compileJsonSchema } from './json-schema-compile';

export const compile = (schema: unknown) => compileJsonSchema(JSON.stringify(schema), 's.json');

/** The error compiling `schema` throws, or undefined when it compiles. */
export function refusal(schema: unknown): ValidationError | undefined {
  try {
    compile(schema);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return err as ValidationError;
  }
}
