/** JSON Schema compilation; apart so the stage thread loads it without the Nest service. */
import Ajv2020 from 'ajv/dist/2020';
import { ValidationError, errorMessage } from '@tapyard/core';
import { compileLinearRegex } from '@tapyard/model';
import { ConfigFileErrorCode } from './config-file-errors';
import { findSelfApplication } from './json-schema-cycles';
import { costProblem, schemaCost } from './json-schema-limits';
import { UNIQUE_ITEMS_KEYWORD } from './json-schema-unique-items';

const LINEAR_REGEXP = Object.assign((pattern: string) => compileLinearRegex(pattern), {
  code: 'compileLinearRegex',
});

/** Compiles a JSON Schema (draft 2020-12 unless it says otherwise); the message names the problem. */
export function compileJsonSchema(text: string, filename: string) {
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (err) {
    throw new ValidationError(`'${filename}' is not valid JSON: ${errorMessage(err)}`).coded(
      ConfigFileErrorCode.InvalidSchema,
    );
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new ValidationError(`'${filename}' is not a JSON Schema (expected an object)`).coded(
      ConfigFileErrorCode.InvalidSchema,
    );
  }
  // Before Ajv (4 s to compile 50,000 subschemas). Checked at upload and again where a job compiles
  // the schema, so one stored before fails its jobs naming the limit.
  const tooCostly = costProblem(schemaCost(schema));
  if (tooCostly) {
    throw new ValidationError(`'${filename}' is not a valid JSON Schema: ${tooCostly}`).coded(
      ConfigFileErrorCode.InvalidSchema,
    );
  }
  const validate = compileWithAjv(schema, filename);
  // Ajv compiles such a schema, then overflows the stack on every record it validates.
  const loop = findSelfApplication(schema);
  if (loop) {
    throw new ValidationError(
      `'${filename}' is not a valid JSON Schema: ${loop.keyword} at '${loop.from}' leads back to '${loop.to}' ` +
        'without moving into the value, so validation would never end',
    ).coded(ConfigFileErrorCode.InvalidSchema);
  }
  return validate;
}

function compileWithAjv(schema: object, filename: string) {
  try {
    const ajv = new Ajv2020({
      allErrors: false,
      strict: false,
      validateFormats: false,
      // `pattern` keywords come from users: linear time, RE2 syntax (as data-quality regex rules).
      code: { regExp: LINEAR_REGEXP },
    });
    // Ajv's compares every pair of items that may be objects or arrays: linear instead.
    ajv.removeKeyword('uniqueItems').addKeyword(UNIQUE_ITEMS_KEYWORD);
    return ajv.compile(schema);
  } catch (err) {
    throw new ValidationError(`'${filename}' is not a valid JSON Schema: ${errorMessage(err)}`).coded(
      ConfigFileErrorCode.InvalidSchema,
    );
  }
}
