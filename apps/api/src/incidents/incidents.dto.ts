import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsNumber, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';

const VERDICTS = ['pending', 'pass', 'fail', 'needs-human'];

export class IncidentQueryDto {
  @ApiPropertyOptional({ description: 'Incidents of this pipeline' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(200)
  pipeline?: string;

  @ApiPropertyOptional({
    description: 'Incidents of this tap (its script changes)',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(200)
  tap?: string;

  @ApiPropertyOptional({ enum: VERDICTS })
  @OptionalNotNull()
  @IsIn(VERDICTS, { message: `verdict must be one of ${VERDICTS.join(', ')}` })
  verdict?: string;
}

export class ResolveIncidentDto {
  @ApiPropertyOptional({ description: 'Why it is resolved (kept with the incident)' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  resolution?: string;
}

export class ScriptVersionChangeDto {
  @ApiProperty({ enum: ['dataQuality', 'transformation'] }) kind!: string;
  @ApiProperty() before!: number;
  @ApiProperty({ description: 'Equals before once a failed verification restored the script' })
  after!: number;
}

export class TapVersionsDto {
  @ApiProperty({ description: "The tap's script version before the change" }) before!: number;
  @ApiProperty({ description: 'The version it changed to' }) after!: number;
}

export class IncidentListItemDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['pipeline', 'tap'] }) subject!: string;
  @ApiProperty() subjectName!: string;
  @ApiProperty({ format: 'date-time' }) openedAt!: string;
  @ApiProperty({ enum: VERDICTS }) verdict!: string;
  @ApiProperty() summary!: string;
}

export class IncidentDto extends IncidentListItemDto {
  @ApiProperty({ enum: ['open', 'resolved'] }) status!: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) resolvedAt!: string | null;
  @ApiProperty({ nullable: true, type: String }) resolution!: string | null;
  @ApiProperty({ type: [ScriptVersionChangeDto], description: 'Empty for tap incidents' })
  scriptVersions!: ScriptVersionChangeDto[];
  @ApiPropertyOptional({ type: TapVersionsDto, description: 'Tap incidents only' })
  tapVersions?: TapVersionsDto;
}

/** PUT /pipelines/{name}/incident-thresholds: any subset; the others keep their current values. */
export class IncidentThresholdsDto {
  @ApiPropertyOptional({
    description: 'Largest record delta, candidate vs baseline, in percent either way (default 20)',
  })
  @OptionalNotNull()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  maxRecordDeltaPct?: number;

  @ApiPropertyOptional({ description: 'A candidate may drop columns (default false)' })
  @OptionalNotNull()
  @IsBoolean()
  allowColumnRemoval?: boolean;

  @ApiPropertyOptional({ description: "A candidate may change a column's type (default false)" })
  @OptionalNotNull()
  @IsBoolean()
  allowTypeChange?: boolean;

  @ApiPropertyOptional({
    description: "Lowest share of rows passing the candidate's data quality, 0..1 (default 0.9)",
  })
  @OptionalNotNull()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  minDqPassRate?: number;

  @ApiPropertyOptional({ description: "Largest increase of a column's null rate, 0..1 (default 0.1)" })
  @OptionalNotNull()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  maxNullRateIncrease?: number;
}

export class ThresholdsDto {
  @ApiProperty() maxRecordDeltaPct!: number;
  @ApiProperty() allowColumnRemoval!: boolean;
  @ApiProperty() allowTypeChange!: boolean;
  @ApiProperty() minDqPassRate!: number;
  @ApiProperty() maxNullRateIncrease!: number;
}

export class PipelineThresholdsDto {
  @ApiProperty({ type: ThresholdsDto }) thresholds!: ThresholdsDto;
  @ApiProperty({ description: "false: the built-in defaults; true: the pipeline's own" }) custom!: boolean;
}
