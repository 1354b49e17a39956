import { ApiProperty } from '@nestjs/swagger';

export class SearchResultDto {
  @ApiProperty({ example: '1f0c3b52-8d1e-8a4f-9c2b-0d5e6f7a8b9c' })
  id!: string;

  @ApiProperty({ example: 'Employees get 25 days of annual leave…' })
  text!: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { uri: 'upload://handbook.pdf', filename: 'handbook.pdf', chunkIndex: 3, pipeline: 'handbook' },
  })
  metadata!: Record<string, string | number | boolean>;

  @ApiProperty({
    example: 0.83,
    minimum: 0,
    maximum: 1,
    description: '(1 + cosine similarity) / 2: higher is more similar; the same scale in every store.',
  })
  _score!: number;
}

export class SearchResponseDto {
  @ApiProperty({ type: [SearchResultDto], description: 'Best first' })
  results!: SearchResultDto[];
}
