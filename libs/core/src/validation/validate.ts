import { BadRequestException, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { ValidationError } from '@tapyard/model';

/** How every request body is validated (the API's global pipe), and every assistant tool's arguments. */
export const VALIDATION_OPTIONS: ValidationPipeOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  stopAtFirstError: false,
};

/** class-validator's messages ("<property> <problem>") as the 400 a route answers: the first one, and all as details. */
export function invalidRequest(messages: string[]): ValidationError {
  const details = messages.map((text) => {
    const sp = text.indexOf(' ');
    return { field: sp > 0 ? text.slice(0, sp) : text, problem: sp > 0 ? text.slice(sp + 1) : 'is invalid' };
  });
  return new ValidationError(
    messages.length > 0 ? `invalid request: ${messages[0]}` : 'invalid request',
    details,
  );
}

const pipe = new ValidationPipe(VALIDATION_OPTIONS);

/** A value validated and transformed as a route body of type `metatype` is, or the same 400. */
export async function validateAs<T extends object>(metatype: new () => T, value: unknown): Promise<T> {
  try {
    return (await pipe.transform(value, { type: 'body', metatype })) as T;
  } catch (err) {
    if (!(err instanceof BadRequestException)) throw err;
    const { message } = err.getResponse() as { message?: unknown };
    throw invalidRequest(Array.isArray(message) ? message.map(String) : [String(message ?? err.message)]);
  }
}
