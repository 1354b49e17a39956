import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, Max, Min } from 'class-validator';

/**
 * The few argument shapes tools take, as decorator sets on their DTOs. toolSchema reads the
 * class-validator metadata they leave (and @ApiProperty's description), so what the model is told
 * and what is checked cannot drift apart.
 */

/** A tool that takes no arguments (any it is given are refused). */
export class NoArgs {}

/**
 * A string, trimmed, never blank. An optional one the model sends empty or null reads as absent:
 * models fill optional string fields with "" more often than they leave them out.
 */
export function TextArg(description: string, opts: { optional?: boolean } = {}): PropertyDecorator {
  return applyDecorators(
    ApiProperty({ description, required: !opts.optional }),
    Transform(({ value }: { value: unknown }) => {
      const v = typeof value === 'string' ? value.trim() : value;
      return opts.optional && (v === '' || v === null) ? undefined : v;
    }),
    ...(opts.optional ? [IsOptional()] : []),
    IsString(),
    IsNotEmpty(),
  );
}

/** A whole number from `min` to `max`; an optional one may be absent or null (the tool's default). */
export function IntArg(
  description: string,
  opts: { min: number; max: number; optional?: boolean },
): PropertyDecorator {
  return applyDecorators(
    ApiProperty({ description, required: !opts.optional }),
    ...(opts.optional ? [IsOptional()] : []),
    IsInt(),
    Min(opts.min),
    Max(opts.max),
  );
}

/** One of `values`. */
export function EnumArg(values: readonly string[], opts: { optional?: boolean } = {}): PropertyDecorator {
  return applyDecorators(
    ApiProperty({ enum: values, required: !opts.optional }),
    ...(opts.optional ? [IsOptional()] : []),
    IsIn([...values]),
  );
}

/** A JSON object, checked further by the tool (e.g. against the DTO of the route it stands for). */
export function ObjectArg(description: string): PropertyDecorator {
  return applyDecorators(
    ApiProperty({ description, type: 'object', additionalProperties: true }),
    IsObject(),
  );
}
