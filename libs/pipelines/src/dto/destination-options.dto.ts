import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsIn, Matches } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';
import { WRITE_MODES, WriteMode } from '@tapyard/model';
import { IDENTIFIER } from './names';

/**
 * The keys of `destination` beside its sections: how the job's rows meet what the table or
 * collection holds. Sinks keep their own semantics (a message sent is sent) and ignore them.
 */
export class DestinationOptionsDto {
  @ApiPropertyOptional({
    enum: WRITE_MODES,
    default: 'append',
    description:
      "append adds the job's rows; replace makes them the table's (collection's) whole content, readers " +
      'seeing the old content or the new, never a mix (object store: a new version under <prefix>/_LATEST); ' +
      'merge upserts them on primaryKey (PostgreSQL and MongoDB only). Sinks ignore it.',
  })
  @OptionalNotNull()
  @IsIn(WRITE_MODES as unknown as string[], {
    message: `writeMode must be one of: ${WRITE_MODES.join(', ')}`,
  })
  writeMode?: WriteMode;

  @ApiPropertyOptional({
    type: [String],
    example: ['order_id'],
    description:
      'merge: the output columns a row is matched on (required for merge, refused otherwise). PostgreSQL ' +
      'gets a unique index on them; a later row of the same key replaces an earlier one.',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(32)
  @ArrayUnique({ message: 'primaryKey must not name a column twice' })
  @Matches(IDENTIFIER, { each: true, message: 'primaryKey must hold column names' })
  primaryKey?: string[];
}
