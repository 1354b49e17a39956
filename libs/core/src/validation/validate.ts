import { ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { ValidationError as ClassValidationError, getMetadataStorage } from 'class-validator';
import { ErrorDetail, ValidationError } from '@tapyard/model';
import { didYouMean } from '../text/did-you-mean';

/** At most this many problems are listed: a 10,000-element array of wrong items names the first ones. */
const MAX_DETAILS = 50;

/** How every request body is validated (the API's global pipe), and every assistant tool's arguments. */
export const VALIDATION_OPTIONS: ValidationPipeOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  stopAtFirstError: false,
  // The target names the properties a misspelt one could have meant; the value tells a missing
  // property from a wrong one. Neither leaves the process: the factory below words the problems.
  validationError: { target: true, value: true },
  exceptionFactory: (errors) => invalidRequest(validationProblems(errors)),
};

/** The problems as the 400 a route answers: the first one in the message, all (bounded) as details. */
export function invalidRequest(problems: ErrorDetail[]): ValidationError {
  const first = problems[0];
  return new ValidationError(
    first ? `invalid request: ${first.field} ${first.problem}` : 'invalid request',
    problems.slice(0, MAX_DETAILS),
  );
}

/**
 * class-validator's findings, one detail per problem, each naming the full path of the property
 * (`source.schemaProperties.fields[2].type`) and what is wrong with it. A missing value reads
 * "is required", a value of the wrong kind names only the kind it must be (not the length rules it
 * cannot meet), an unknown property or enum value names the valid ones and suggests a near miss.
 */
export function validationProblems(errors: ClassValidationError[], path = ''): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  for (const e of errors) {
    const field = join(path, e.property);
    for (const problem of propertyProblems(e)) {
      if (!problems.some((p) => p.field === field && p.problem === problem))
        problems.push({ field, problem });
    }
    problems.push(...validationProblems(e.children ?? [], field));
  }
  return problems;
}

/** Constraints that say what kind of value a property holds: when one fails, the others are noise. */
const KIND_CONSTRAINTS = new Set([
  'isDefined',
  'isString',
  'isArray',
  'isObject',
  'isBoolean',
  'isNumber',
  'isInt',
  'isDate',
  'nestedValidation',
]);

function propertyProblems(e: ClassValidationError): string[] {
  const constraints = Object.entries(e.constraints ?? {});
  if (constraints.length === 0) return [];
  if (e.constraints?.whitelistValidation !== undefined) {
    const known = knownProperties(e.target);
    return [
      `should not exist${didYouMean(e.property, known)}` +
        (known.length > 0 ? `: the properties here are ${known.join(', ')}` : ''),
    ];
  }
  // An array's item is named by its index: it has the item's kind to be, whatever the array's rules say.
  if (/^\d+$/.test(e.property) && e.constraints?.nestedValidation) return ['must be an object'];
  // The kind a value must be says more than its other rules (a length limit is no help when it is absent).
  const kind =
    constraints.find(([name]) => KIND_CONSTRAINTS.has(name) && name !== 'nestedValidation') ??
    constraints.find(([name]) => name === 'nestedValidation');
  if (e.value === undefined || e.value === null) {
    const [name, message] = kind ?? constraints[0];
    return [`is required: ${wording(e.property, name, message)}`];
  }
  return (kind ? [kind] : constraints).map(([name, message]) => {
    const problem = wording(e.property, name, message);
    return name === 'isIn' && typeof e.value === 'string'
      ? problem + didYouMean(e.value, allowedValues(e.target, e.property))
      : problem;
  });
}

/** A class-validator message without the property name it starts with. */
function wording(property: string, constraint: string, message: string): string {
  if (constraint === 'nestedValidation') {
    return message.startsWith('each value') ? 'must be an array of objects' : 'must be an object';
  }
  // The pipe's own check of a body that is an array or a primitive.
  if (message.startsWith('Validation failed (object is expected)')) return 'must be a JSON object';
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
}

function join(path: string, property: string): string {
  if (/^\d+$/.test(property)) return `${path}[${property}]`;
  return path === '' ? property : `${path}.${property}`;
}

/** The properties a DTO declares, read from the instance the failing property was found in. */
function knownProperties(target: object | undefined): string[] {
  if (!target) return [];
  const metadata = getMetadataStorage().getTargetValidationMetadatas(target.constructor, '', true, false);
  return [...new Set(metadata.map((m) => m.propertyName))];
}

function allowedValues(target: object | undefined, property: string): string[] {
  if (!target) return [];
  const isIn = getMetadataStorage()
    .getTargetValidationMetadatas(target.constructor, '', true, false)
    .find((m) => m.propertyName === property && m.name === 'isIn');
  const values: unknown = isIn?.constraints?.[0];
  return Array.isArray(values) ? values.map(String) : [];
}

const pipe = new ValidationPipe(VALIDATION_OPTIONS);

/** A value validated and transformed as a route body of type `metatype` is, or the same 400. */
export async function validateAs<T extends object>(metatype: new () => T, value: unknown): Promise<T> {
  return (await pipe.transform(value, { type: 'body', metatype })) as T;
}
