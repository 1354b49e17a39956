import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsString, Matches, MaxLength } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';
import { DestinationNotAllowedError, DestinationSection, confinementOf } from '@tapyard/pipelines';

/** What the client compresses record batches with (each a codec every Kafka broker and consumer reads). */
export const KAFKA_COMPRESSIONS = ['gzip', 'zstd', 'lz4', 'snappy', 'none'] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];

export class KafkaDestinationDto {
  @ApiProperty({
    description:
      'Secret with `brokers` (host:port,…), optional `username`, `password`, `mechanism` (plain|scram-sha-256|scram-sha-512), `ssl` (true|false)',
  })
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'secretName must be a secret name' })
  secretName!: string;

  @ApiProperty({ example: 'orders' })
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{1,249}$/, { message: 'topic must be 1-249 letters, digits, . _ -' })
  topic!: string;

  @ApiPropertyOptional({ description: 'Column whose value is the message key (default: no key)' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(200)
  keyColumn?: string;

  @ApiPropertyOptional({ enum: ['json'], default: 'json' })
  @OptionalNotNull()
  @IsIn(['json'])
  format?: 'json';

  @ApiPropertyOptional({
    enum: KAFKA_COMPRESSIONS,
    default: 'gzip',
    description:
      'Codec of the record batches: gzip (the default: JSON rows in a fraction of the bytes), zstd, lz4, snappy or none (the least CPU, for a broker on a fast network)',
  })
  @OptionalNotNull()
  @IsIn(KAFKA_COMPRESSIONS)
  compression?: KafkaCompression;
}

export interface KafkaTarget {
  secretName: string;
  topic: string;
  keyColumn: string | null;
  format: 'json';
  /** Absent from sections stored before it existed: gzip. */
  compression?: KafkaCompression;
}

/** One JSON message per row to a Kafka topic, one transaction per job. */
export const kafkaSection: DestinationSection<KafkaDestinationDto, KafkaTarget> = {
  key: 'kafka',
  dto: KafkaDestinationDto,
  description:
    'A Kafka topic: one JSON message per row, headers with the tokens, the whole job in one transaction',
  complete: (k) => ({
    secretName: k.secretName,
    topic: k.topic,
    keyColumn: k.keyColumn ?? null,
    format: 'json',
    compression: k.compression ?? 'gzip',
  }),
  confine(config, environment, k) {
    if (k.topic.startsWith('__')) throw new DestinationNotAllowedError(k.topic, 'is an internal Kafka topic');
    // A tenant's messages go only to topics of its own (`<tenant>.…`) on a shared cluster.
    if (confinementOf(config, environment).tenant && !k.topic.startsWith(`${environment}.`)) {
      throw new DestinationNotAllowedError(
        k.topic,
        `is not a topic of tenant '${environment}' (use ${environment}.<name>)`,
      );
    }
  },
  loadedBy: () => 'kafka',
  secretName: (k) => k.secretName,
};
