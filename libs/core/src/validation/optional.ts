import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsOptional } from 'class-validator';

/**
 * An optional body field whose value cannot be null: `null` reads as absent (keep the stored
 * value, or take the default). A client that reads a resource, changes one field and posts it back
 * sends the nulls it read; class-validator's `@IsOptional` alone would let them through to code
 * that expects a value. Fields where null means something (clear it) keep `@IsOptional` and say
 * `nullable` in their OpenAPI description.
 */
export function OptionalNotNull(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (value === null ? undefined : value)),
    IsOptional(),
  );
}
