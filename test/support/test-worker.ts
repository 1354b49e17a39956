import { DynamicModule, Module } from '@nestjs/common';
import { Job } from 'bullmq';
// Relative imports only: spawned, this file runs transpiled inside the build (see testWorkerMain in
// processes.ts), next to the apps and libs it boots.
import { PING_DELAY, PingDelay } from '../../apps/worker/src/maintenance.processor';
import { runWorker } from '../../apps/worker/src/main';
import { PingPayload } from '../../libs/queue/src/queues';
import { STAGE_SPIN_ON } from '../../libs/ingestion/src/stage-spin';

export interface TestHooks {
  /** A value holding this text makes the DataQuality stage spin without end (a stand-in for a pathological input). */
  spinOn?: string;
}

/**
 * A ping to a test worker: one whose payload carries `holdMs` stays in flight that long, so shutdowns
 * and hand-backs get a job to wait for. The app reads no such field (nor minds it).
 */
export type HeldPing = PingPayload & { holdMs?: number };

const holdPing: PingDelay = async (job: Job) => {
  const holdMs: unknown = (job.data as { holdMs?: unknown }).holdMs;
  if (typeof holdMs === 'number' && holdMs > 0) await new Promise((r) => setTimeout(r, holdMs));
};

@Module({})
class TestHooksModule {}

/** The hooks the worker's production module leaves unset, for a worker under test. */
export function testHooks(hooks: TestHooks = {}): DynamicModule {
  return {
    module: TestHooksModule,
    global: true,
    providers: [
      { provide: STAGE_SPIN_ON, useValue: hooks.spinOn ?? null },
      { provide: PING_DELAY, useValue: holdPing },
    ],
    exports: [STAGE_SPIN_ON, PING_DELAY],
  };
}

// The test worker process (spawnApp('test-worker')): the worker app, with the hooks; TAPYARD_TEST_SPIN_ON
// is read here, never by the app's config.
if (require.main === module) runWorker([testHooks({ spinOn: process.env.TAPYARD_TEST_SPIN_ON })]);
