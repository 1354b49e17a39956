import { ApiProperty } from '@nestjs/swagger';

export class SecretDto {
  @ApiProperty({ example: 'warehouse' })
  name!: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { username: 'loader', password: '\u2022'.repeat(8), host: 'db.internal' },
    description:
      'Fields named password, apiKey, secretKey, token or secret are masked as eight U+2022 bullets.',
  })
  fields!: Record<string, string>;
}

export class StatusOkDto {
  @ApiProperty({ example: 'ok' })
  status!: string;
}
