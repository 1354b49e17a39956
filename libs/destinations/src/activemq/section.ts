import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches } from 'class-validator';
import { DestinationNotAllowedError, DestinationSection, confinementOf } from '@tapyard/pipelines';

export class ActiveMqDestinationDto {
  @ApiProperty({
    description: 'Secret with `url` (stomp://host:port or stomp+ssl://…), `username`, `password`',
  })
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'secretName must be a secret name' })
  secretName!: string;

  @ApiProperty({ example: '/queue/orders', description: '/queue/<name> or /topic/<name>' })
  @IsString()
  @Matches(/^\/(queue|topic)\/[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, {
    message: 'destination must be /queue/<name> or /topic/<name> (letters, digits, . _ -)',
  })
  destination!: string;
}

export interface ActiveMqTarget {
  secretName: string;
  destination: string;
}

/** One persistent JSON message per row to an ActiveMQ queue or topic, over STOMP. */
export const activeMqSection: DestinationSection<ActiveMqDestinationDto, ActiveMqTarget> = {
  key: 'activemq',
  dto: ActiveMqDestinationDto,
  description: 'An ActiveMQ queue or topic over STOMP: one persistent JSON message per row, receipts awaited',
  complete: (a) => ({ secretName: a.secretName, destination: a.destination }),
  confine(config, environment, a) {
    // A tenant's messages go only to names of its own (`/queue/<tenant>.…`) on a shared broker.
    const c = confinementOf(config, environment);
    const name = a.destination.replace(/^\/(queue|topic)\//, '');
    const own = environment;
    if (c.tenant && !name.startsWith(`${own}.`)) {
      throw new DestinationNotAllowedError(
        a.destination,
        `is not a name of tenant '${own}' (use ${own}.<name>)`,
      );
    }
  },
  loadedBy: () => 'activemq',
  secretName: (a) => a.secretName,
};
