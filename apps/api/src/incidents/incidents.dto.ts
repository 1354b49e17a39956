import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';

const VERDICTS = ['pending', 'pass', 'fail', 'needs-human'];

export class IncidentQueryDto {
  @ApiPropertyOptional({ description: 'Incidents of this pipeline' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(200)
  pipeline?: string;

  @ApiPropertyOptional({
    description: 'Incidents of this tap (tap script changes open none yet: always empty)',
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

export class IncidentListItemDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['pipeline'] }) subject!: string;
  @ApiProperty() subjectName!: string;
  @ApiProperty({ format: 'date-time' }) openedAt!: string;
  @ApiProperty({ enum: VERDICTS }) verdict!: string;
  @ApiProperty() summary!: string;
}

export class IncidentDto extends IncidentListItemDto {
  @ApiProperty({ enum: ['open', 'resolved'] }) status!: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) resolvedAt!: string | null;
  @ApiProperty({ nullable: true, type: String }) resolution!: string | null;
  @ApiProperty({ type: [ScriptVersionChangeDto] }) scriptVersions!: ScriptVersionChangeDto[];
}
