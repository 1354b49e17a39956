import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches } from 'class-validator';
import { DestinationNotAllowedError, DestinationSection, confinementOf } from '@tapyard/pipelines';

export class DatabricksDestinationDto {
  @ApiProperty({
    description:
      'Secret with `host`, `token`, `warehouseId`, `catalog`, `schema` (optional `volume`, default tapyard_staging)',
  })
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'secretName must be a secret name' })
  secretName!: string;

  @ApiProperty({ example: 'orders', description: "Table in the secret's catalog and schema" })
  @IsString()
  @Matches(/^[A-Za-z_][A-Za-z0-9_]{0,254}$/, {
    message: 'table must be letters, digits and _ (not starting with a digit)',
  })
  table!: string;
}

export interface DatabricksTarget {
  secretName: string;
  table: string;
}

/** A Databricks SQL table, loaded with COPY INTO from Parquet staged in a Unity Catalog volume. */
export const databricksSection: DestinationSection<DatabricksDestinationDto, DatabricksTarget> = {
  key: 'databricks',
  dto: DatabricksDestinationDto,
  description:
    'A Databricks table: Parquet staged in a volume, then COPY INTO through the SQL Statement Execution API',
  complete: (d) => ({ secretName: d.secretName, table: d.table }),
  confine(config, environment, d) {
    if (
      confinementOf(config, environment).tenant &&
      !d.table.startsWith(`${environment.replace(/[^A-Za-z0-9_]/g, '_')}_`)
    ) {
      throw new DestinationNotAllowedError(
        d.table,
        'is not a table of this tenant (prefix it with the tenant name and _)',
      );
    }
  },
  loadedBy: () => 'databricks',
  secretName: (d) => d.secretName,
};
