/** Test topics: `<prefix>.<environment>.<name>`, the environment one of uniqueEnvironment's. */
export const TEST_TOPIC: RegExp;

export function removeEnvironmentTopics(brokers: string, environments: string[]): Promise<string[]>;

export function sweepStaleTestTopics(
  brokers: string,
  options: { olderThanMs: number; budgetMs: number; matches?: (topic: string) => boolean },
): Promise<{ removed: number; left: number }>;
