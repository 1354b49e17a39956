import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class VersionInfoDto {
  @ApiProperty({ example: '0.1.0' })
  version!: string;

  @ApiProperty({ example: 'dev', description: 'TAPYARD_ENV: the environment this instance serves.' })
  environment!: string;

  @ApiProperty({ example: 'false', enum: ['true', 'false'] })
  multiTenant!: string;

  @ApiProperty({ example: 'false', enum: ['true', 'false'] })
  hosted!: string;

  @ApiProperty({ example: 'false', enum: ['true', 'false'] })
  useUserAuth!: string;

  @ApiProperty({ example: 'false', enum: ['true', 'false'] })
  useApiKeys!: string;

  @ApiProperty({ example: 'tapyard', description: 'Canonical relational database name.' })
  postgresDatabase!: string;

  @ApiProperty({
    example: 'dev',
    description: 'Canonical document database name (the tenant environment in multi-tenant mode).',
  })
  mongodbDatabase!: string;
}

export class ServiceStatusDto {
  @ApiProperty({ enum: ['up', 'down', 'not_configured'], example: 'down' })
  status!: string;

  @ApiPropertyOptional({
    example: 'connect ECONNREFUSED 127.0.0.1:27017',
    description: 'Why a service is down; absent when not configured.',
  })
  message?: string;
}

export const HEALTH_EXAMPLE = {
  postgres: { status: 'up' },
  redis: { status: 'up' },
  mongodb: { status: 'down', message: 'connect ECONNREFUSED 127.0.0.1:27017' },
  minio: { status: 'not_configured' },
  activemq: { status: 'not_configured' },
  kafka: { status: 'not_configured' },
  qdrant: { status: 'not_configured' },
  weaviate: { status: 'not_configured' },
  milvus: { status: 'not_configured' },
  chroma: { status: 'up' },
  pgvector: { status: 'not_configured' },
  sandbox: {
    status: 'up',
    message:
      "bwrap: own namespaces and a private network; scripts reach public addresses through the platform's egress " +
      'proxy (0 allow-listed private endpoints); each run has a uid (1000000000-1000065535) and a cgroup v2 (pids, ' +
      'memory, cpu) of its own',
  },
  ai: { status: 'up', message: 'openai, model gpt-4.1-mini' },
};
