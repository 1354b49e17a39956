import Redis from 'ioredis';
import pino from 'pino';
import { AssistantTurns } from '@tapyard/assistant';
import { AuthRedis } from '@tapyard/auth';
import { loadConfig } from '@tapyard/core';
import { testEnv } from './support/env';

/**
 * A cancel published while the instance running the turn has lost its subscriber connection (Redis
 * pub/sub delivers nothing to a client that is away) still stops the turn once the subscriber is back.
 */
describe('assistant turn cancel across a subscriber reconnect', () => {
  const config = loadConfig(testEnv());
  const authRedis = new AuthRedis(config);
  const turns = new AssistantTurns(authRedis, config, pino({ level: 'silent' }));
  const admin = new Redis(config.redis.url);

  afterAll(async () => {
    await turns.onModuleDestroy();
    authRedis.onModuleDestroy();
    admin.disconnect();
  });

  it('aborts the turn after the reconnect', async () => {
    const turn = await turns.start(config.environment, 'alice');
    const name = `tapyard-assistant-cancel-${process.pid}`;
    const clients = String(await admin.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(` name=${name} `));
    expect(clients).toHaveLength(1);
    const id = /\bid=(\d+)/.exec(clients[0])![1];
    await admin.client('KILL', 'ID', id);
    // Published before the subscriber can be back (ioredis waits at least 50 ms to reconnect).
    await turns.cancel(config.environment, 'alice', turn.turnId);
    for (let i = 0; i < 200 && !turn.signal.aborted; i++) await new Promise((r) => setTimeout(r, 50));
    expect(turn.signal.aborted).toBe(true);
    await turn.end();
  });

  it('a cancel of an ended turn is still 404', async () => {
    const turn = await turns.start(config.environment, 'bob');
    await turn.end();
    await expect(turns.cancel(config.environment, 'bob', turn.turnId)).rejects.toThrow(/no running/);
  });
});
