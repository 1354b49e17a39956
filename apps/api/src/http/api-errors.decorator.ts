import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from './error-body.dto';

/** The statuses an operation documents with the shared error body. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 502 | 503;

/** What an error status means for one operation, where the status alone does not say it. */
export type ErrorDescriptions = Partial<Record<ErrorStatus, string>>;

/**
 * The error answers of an operation in the OpenAPI document, each with the ErrorBody schema:
 * `@ApiErrors(404)`, or with what a status means there, `@ApiErrors(404, { 409: 'The label exists' })`.
 */
export function ApiErrors(
  ...answers: (ErrorStatus | ErrorDescriptions)[]
): ReturnType<typeof applyDecorators> {
  const responses = answers.flatMap((a): { status: number; description?: string }[] =>
    typeof a === 'number'
      ? [{ status: a }]
      : Object.entries(a).map(([status, description]) => ({ status: Number(status), description })),
  );
  return applyDecorators(...responses.map((r) => ApiResponse({ ...r, type: ErrorBodyDto })));
}
