import { ApiProperty } from '@nestjs/swagger';

export class SecretDto {
  @ApiProperty({ example: 'warehouse' })
  name!: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { username: 'loader', password: '\u2022'.repeat(8), host: 'db.internal' },
    description:
      'Fields named password, apiKey, secretKey, token, secret or privateKey (any case) are masked as eight U+2022 ' +
      'bullets. A value that is a URL keeps its shape with its userinfo password (and query parameters of those ' +
      'names) masked: postgres://vec:\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022@db:5432/vectors.',
  })
  fields!: Record<string, string>;
}

export class StatusOkDto {
  @ApiProperty({ example: 'ok' })
  status!: string;
}
