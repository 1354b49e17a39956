import { Type } from '@nestjs/common';
import { DestinationSection } from '@tapyard/pipelines';
import { Destination } from './destination';
import { MongoDbDestination } from './mongodb/mongodb.destination';
import { ObjectStoreDestination } from './objectstore/objectstore.destination';
import { objectStoreSection } from './objectstore/section';
import { PostgresDestination } from './postgres/postgres.destination';
import { databaseSection } from './postgres/section';
import { vectorStoreSection } from './vectorstore/section';
import { RestDestination } from './rest/rest.destination';
import { restSection } from './rest/section';
import { ActiveMqDestination } from './activemq/activemq.destination';
import { activeMqSection } from './activemq/section';
import { KafkaDestination } from './kafka/kafka.destination';
import { kafkaSection } from './kafka/section';
import { DatabricksDestination } from './databricks/databricks.destination';
import { databricksSection } from './databricks/section';
import { SnowflakeDestination } from './snowflake/snowflake.destination';
import { snowflakeSection } from './snowflake/section';

/** A plug-in as registered: the sections of `destination` it declares, and its loader (a provider). */
export interface DestinationPlugin {
  // Sections are heterogeneous by nature: each has its own DTO and stored form.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  sections: DestinationSection<any, any>[];
  loader: Type<Destination> | null;
}

/**
 * The destination plug-ins the apps register (DestinationsModule.forRoot(DESTINATION_PLUGINS)).
 * Adding a destination: its folder, and one line here.
 */
export const DESTINATION_PLUGINS: readonly DestinationPlugin[] = [
  { sections: [databaseSection], loader: PostgresDestination },
  { sections: [databaseSection], loader: MongoDbDestination },
  { sections: [objectStoreSection], loader: ObjectStoreDestination },
  { sections: [vectorStoreSection], loader: null },
  { sections: [restSection], loader: RestDestination },
  { sections: [activeMqSection], loader: ActiveMqDestination },
  { sections: [kafkaSection], loader: KafkaDestination },
  { sections: [databricksSection], loader: DatabricksDestination },
  { sections: [snowflakeSection], loader: SnowflakeDestination },
];
