import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsString, MaxLength, MinLength } from 'class-validator';
import { ROLES, TEMPLATE_NAMES } from '@tapyard/auth';

export class AuthModeDto {
  @ApiProperty({ example: true, description: 'USE_USER_AUTH: the console offers a login' })
  useUserAuth!: boolean;

  @ApiProperty({ example: true, description: 'USE_API_KEYS: programmatic requests need an x-api-key' })
  useApiKeys!: boolean;

  @ApiProperty({ example: false, description: 'MULTI_TENANT: keys select a tenant environment' })
  multiTenant!: boolean;
}

export class IssueKeyDto {
  @ApiProperty({
    example: 'reporting-bot',
    description:
      "Lowercase letters, digits, '-' and '_', starting with a letter; 'ui' and 'bootstrap' are reserved",
  })
  @IsString()
  @MaxLength(63)
  label!: string;

  @ApiPropertyOptional({ enum: TEMPLATE_NAMES, example: 'read-only' })
  @OptionalNotNull()
  @IsString()
  template?: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['pipeline:read:catalog=sales', 'job:read'],
    description:
      'Manual capability list `resource:action[:scope]`, instead of a template. Each must be held by the caller: ' +
      'the same resource:action or a wildcard, unscoped or with the same scope',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(200)
  @IsString({ each: true })
  capabilities?: string[];

  @ApiPropertyOptional({
    example: 'acme',
    description:
      'Multi-tenant mode, operator callers with full access (`*:*`) only: issue the key in this tenant environment ' +
      '(never the operator environment itself)',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(40)
  tenant?: string;
}

export class IssuedKeyDto {
  @ApiProperty({ example: 'reporting-bot' })
  label!: string;

  @ApiProperty({ example: 'tpy_3q2T0v…', description: 'The key value: shown only in this response' })
  key!: string;

  @ApiProperty({ type: [String], example: ['pipeline:read', 'job:read'] })
  capabilities!: string[];
}

export class RotatedKeyDto {
  @ApiProperty({ example: 'reporting-bot' })
  label!: string;

  @ApiProperty({
    example: 'tpy_Zk81…',
    description: 'The new value, shown once; the old one no longer works',
  })
  key!: string;
}

export class KeyViewDto {
  @ApiProperty({ example: 'reporting-bot' })
  label!: string;

  @ApiProperty({ type: [String], example: ['pipeline:read', 'job:read'] })
  capabilities!: string[];

  @ApiProperty({ enum: TEMPLATE_NAMES, nullable: true, example: 'read-only', type: String })
  template!: string | null;

  @ApiProperty({ example: '2026-11-22T09:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({
    nullable: true,
    type: String,
    example: '2026-11-22T09:05:00.000Z',
    description: 'Written in batches (KEY_USAGE_FLUSH_MS), so it may trail by that much',
  })
  lastUsedAt!: string | null;

  @ApiProperty({ example: false })
  revoked!: boolean;
}

export class RevokedKeyDto {
  @ApiProperty({ example: 'revoked' })
  status!: 'revoked';

  @ApiProperty({ example: 'reporting-bot' })
  label!: string;
}

export class TenantMappingDto {
  @ApiProperty({
    example: 'tpy_made-elsewhere-0123456789abcdef',
    description:
      'A key value made outside Tapyard (24 to 1024 characters). Only its HMAC digest is stored; it is never returned',
  })
  @IsString()
  @MinLength(24)
  @MaxLength(1024)
  key!: string;

  @ApiProperty({ example: 'acme', description: 'Tenant environment; never the operator environment' })
  @IsString()
  @MaxLength(40)
  tenant!: string;
}

export class TenantUnmappingDto {
  @ApiProperty({ example: 'tpy_made-elsewhere-0123456789abcdef', description: 'The mapped key value' })
  @IsString()
  @MaxLength(1024)
  key!: string;
}

export class TenantMappedDto {
  @ApiProperty({ example: 'ok' })
  status!: 'ok';

  @ApiProperty({ example: 'acme' })
  tenant!: string;
}

export class LoginDto {
  @ApiProperty({ example: 'admin' })
  @IsString()
  @MaxLength(128)
  username!: string;

  @ApiProperty({ example: 'correct horse battery staple' })
  @IsString()
  @MaxLength(1024)
  password!: string;
}

export class LoginResultDto {
  @ApiProperty({ example: 'admin' })
  username!: string;

  @ApiProperty({ enum: ROLES, example: 'admin' })
  role!: string;

  @ApiProperty({
    example: 'mX3…',
    description:
      'Send it as the x-csrf-token header on writes made with the session cookie (also in cookie tapyard_csrf)',
  })
  csrfToken!: string;
}

export class MeDto {
  @ApiProperty({ example: 'session:admin', description: 'Key label, session:<username> or anonymous' })
  identity!: string;

  @ApiProperty({ enum: ['anonymous', 'key', 'session'], example: 'session' })
  kind!: string;

  @ApiPropertyOptional({ example: 'admin' })
  username?: string;

  @ApiPropertyOptional({ enum: ROLES, example: 'admin' })
  role?: string;

  @ApiProperty({ type: [String], example: ['*:*'] })
  capabilities!: string[];

  @ApiProperty({ example: true, description: 'Holds the legacy full-access capability *:*' })
  legacy!: boolean;

  @ApiProperty({ example: 'dev' })
  environment!: string;
}

export class CreateUserDto {
  @ApiProperty({ example: 'maria' })
  @IsString()
  username!: string;

  @ApiProperty({
    example: 'a long passphrase',
    description: '12 to 1024 characters; stored as an scrypt hash',
  })
  @IsString()
  password!: string;

  @ApiProperty({ enum: ROLES, example: 'editor' })
  @IsString()
  @IsIn(ROLES as unknown as string[])
  role!: string;
}

export class UpdateUserDto {
  @ApiPropertyOptional({ example: 'a new long passphrase' })
  @OptionalNotNull()
  @IsString()
  password?: string;

  @ApiPropertyOptional({ enum: ROLES, example: 'viewer' })
  @OptionalNotNull()
  @IsString()
  @IsIn(ROLES as unknown as string[])
  role?: string;
}

export class UserDto {
  @ApiProperty({ example: 'maria' })
  username!: string;

  @ApiProperty({ enum: ROLES, example: 'editor' })
  role!: string;

  @ApiProperty({ example: '2026-11-22T09:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ example: '2026-11-22T09:00:00.000Z' })
  updatedAt!: string;
}
