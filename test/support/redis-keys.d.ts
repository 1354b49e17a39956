export function removeEnvironmentKeys(url: string, environments: string[]): Promise<number>;

export function sweepIdleEnvironmentKeys(
  url: string,
  options?: { idleSeconds?: number; budgetMs?: number; matches?: (environment: string) => boolean },
): Promise<number>;
