import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches } from 'class-validator';
import { DestinationNotAllowedError, DestinationSection, confinementOf } from '@tapyard/pipelines';

export class SnowflakeDestinationDto {
  @ApiProperty({
    description:
      'Secret with `account`, `user`, `password` (or `privateKey`), `warehouse`, `database`, `schema`, optional `role`, ' +
      '`accessUrl` (an account URL under snowflakecomputing.com, .cn or .mil, or an endpoint on TAP_EGRESS_ALLOW)',
  })
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'secretName must be a secret name' })
  secretName!: string;

  @ApiProperty({
    example: 'ORDERS',
    description: "Table in the secret's database and schema (unquoted identifier)",
  })
  @IsString()
  @Matches(/^[A-Za-z_][A-Za-z0-9_]{0,254}$/, {
    message: 'table must be letters, digits and _ (not starting with a digit)',
  })
  table!: string;
}

export interface SnowflakeTarget {
  secretName: string;
  table: string;
}

/** A Snowflake table, loaded with COPY INTO from Parquet PUT into the table's stage. */
export const snowflakeSection: DestinationSection<SnowflakeDestinationDto, SnowflakeTarget> = {
  key: 'snowflake',
  dto: SnowflakeDestinationDto,
  description:
    "A Snowflake table: Parquet PUT into the table's stage, then COPY INTO (load history skips staged files loaded before)",
  complete: (d) => ({ secretName: d.secretName, table: d.table }),
  confine(config, environment, d) {
    const prefix = `${environment.replace(/[^A-Za-z0-9_]/g, '_')}_`.toUpperCase();
    if (confinementOf(config, environment).tenant && !d.table.toUpperCase().startsWith(prefix)) {
      throw new DestinationNotAllowedError(
        d.table,
        'is not a table of this tenant (prefix it with the tenant name and _)',
      );
    }
  },
  loadedBy: () => 'snowflake',
  secretName: (d) => d.secretName,
};
