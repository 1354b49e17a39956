import { INestApplicationContext } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { TapyardConfig, createLogger, loadConfig } from '@tapyard/core';
import { createApiApp } from '../../apps/api/src/bootstrap';
import { createWorkerApp } from '../../apps/worker/src/bootstrap';
import { testEnv } from './env';
import { LogCapture } from './log-capture';
import { TestHooks, testHooks } from './test-worker';

export interface TestApi {
  app: NestExpressApplication;
  http: TestAgent;
  config: TapyardConfig;
  logs: LogCapture;
  close(): Promise<void>;
}

/** The real API application, in process, on an ephemeral port, against the real peers. */
export async function startApi(overrides: Record<string, string | undefined> = {}): Promise<TestApi> {
  const config = loadConfig(testEnv(overrides));
  const logs = new LogCapture();
  const app = await createApiApp(config, createLogger(config.logLevel, 'api', logs));
  try {
    await app.init();
  } catch (err) {
    // A refused boot must not leave pools open behind it.
    await app.close().catch(() => undefined);
    throw err;
  }
  return { app, http: request(app.getHttpServer()), config, logs, close: () => app.close() };
}

export interface TestWorker {
  app: INestApplicationContext;
  config: TapyardConfig;
  logs: LogCapture;
  close(): Promise<void>;
}

/** The real worker application, in process; `hooks`: with the test hooks (test-worker.ts). */
export async function startWorker(
  overrides: Record<string, string | undefined> = {},
  hooks?: TestHooks,
): Promise<TestWorker> {
  // Several workers run at once in one test process: each takes an ephemeral operations port.
  const config = loadConfig(testEnv({ WORKER_HTTP_PORT: '0', ...overrides }));
  const logs = new LogCapture();
  const app = await createWorkerApp(
    config,
    createLogger(config.logLevel, 'worker', logs),
    hooks ? [testHooks(hooks)] : [],
  );
  await app.init();
  return { app, config, logs, close: () => app.close() };
}
