import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ErrorDetailDto {
  @ApiProperty({ example: 'token' })
  field!: string;

  @ApiProperty({ example: 'must be a string, got number' })
  problem!: string;
}

/** Every error answer has this shape (contract addendum, "Errors"). */
export class ErrorBodyDto {
  @ApiProperty({ example: 404 })
  statusCode!: number;

  @ApiProperty({ example: 'Not Found' })
  error!: string;

  @ApiProperty({
    example: 'secret.not_found',
    description:
      'What went wrong, for clients to match instead of the message: a domain code `<domain>.<what>` where ' +
      'the error has one, otherwise the HTTP class (validation_failed, unauthorized, forbidden, not_found, ' +
      'conflict, payload_too_large, unsupported_media_type, unprocessable, rate_limited, internal, ' +
      'upstream_failed, service_unavailable). A published code keeps its meaning.',
  })
  code!: string;

  @ApiProperty({ example: "secret 'warehouse' does not exist" })
  message!: string;

  @ApiPropertyOptional({ type: [ErrorDetailDto] })
  details?: ErrorDetailDto[];
}
