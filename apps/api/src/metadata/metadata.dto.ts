import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsString, MaxLength } from 'class-validator';
import { toBool } from '../http/query-transforms';

export class DatabaseQueryDto {
  @ApiPropertyOptional({
    description: 'Default: the platform database (POSTGRES_DATABASE), the only one a tenant may name',
    example: 'tapyard',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(63)
  database?: string;
}

const SCHEMA_DESCRIPTION =
  'Default: public; for a tenant its own schema t_<tenant>, the only one it may name';

export class TablesQueryDto extends DatabaseQueryDto {
  @ApiPropertyOptional({ default: 'public', description: SCHEMA_DESCRIPTION })
  @OptionalNotNull()
  @IsString()
  @MaxLength(63)
  schema?: string;

  @ApiPropertyOptional({
    default: false,
    description: 'true: only tables with an `embedding` column; false: those tables are left out',
  })
  @OptionalNotNull()
  @Transform(toBool)
  @IsBoolean({ message: 'vectorOnly must be true or false' })
  vectorOnly?: boolean;
}

export class ColumnsQueryDto extends DatabaseQueryDto {
  @ApiPropertyOptional({ default: 'public', description: SCHEMA_DESCRIPTION })
  @OptionalNotNull()
  @IsString()
  @MaxLength(63)
  schema?: string;

  @ApiProperty({ example: 'orders' })
  @IsString()
  @MaxLength(63)
  table!: string;
}

export class MongoCollectionsQueryDto {
  @ApiPropertyOptional({ description: 'Without it: every collection as `<database>.<collection>`' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(63)
  database?: string;
}

export class ColumnDto {
  @ApiProperty({ example: 'amount' })
  name!: string;

  @ApiProperty({ example: 'numeric(10,2)' })
  type!: string;
}
