export function removeEnvironmentTopics(brokers: string, environments: string[]): Promise<string[]>;

export function sweepStaleTestTopics(
  brokers: string,
  options: { olderThanMs: number; budgetMs: number; matches?: (topic: string) => boolean },
): Promise<{ removed: number; left: number }>;
