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

  @ApiProperty({ example: "secret 'warehouse' does not exist" })
  message!: string;

  @ApiPropertyOptional({ type: [ErrorDetailDto] })
  details?: ErrorDetailDto[];
}
