import { loadConfig } from '@tapyard/core';
import { SinkGate } from './sink-gate';

describe('SinkGate', () => {
  const gate = () =>
    new SinkGate(
      loadConfig({ TAPYARD_MASTER_KEY: 'ab'.repeat(32), WORKER_CONCURRENCY: '3', SINK_CONCURRENCY: '2' }),
    );

  it('lets SINK_CONCURRENCY jobs of an environment in, refuses the next, and takes it once one leaves', () => {
    const g = gate();
    const a = g.enter('dev', 'job-a');
    const b = g.enter('dev', 'job-b');
    expect(a).not.toBeNull();
    expect(b).not.toBeNull();
    expect(g.enter('dev', 'job-c')).toBeNull();
    a!();
    a!(); // leaving twice gives back one place only
    expect(g.enter('dev', 'job-c')).not.toBeNull();
    expect(g.enter('dev', 'job-d')).toBeNull();
  });

  it("a job's legs to several sinks share its one place", () => {
    const g = gate();
    const kafka = g.enter('dev', 'job-a');
    const rest = g.enter('dev', 'job-a');
    expect(g.enter('dev', 'job-b')).not.toBeNull();
    expect(g.enter('dev', 'job-c')).toBeNull();
    kafka!();
    expect(g.enter('dev', 'job-c')).toBeNull(); // job-a's REST leg still holds its place
    rest!();
    expect(g.enter('dev', 'job-c')).not.toBeNull();
  });

  it('counts each environment (each tenant has its own worker slots) apart', () => {
    const g = gate();
    g.enter('acme', 'job-a');
    g.enter('acme', 'job-b');
    expect(g.enter('acme', 'job-c')).toBeNull();
    expect(g.enter('globex', 'job-c')).not.toBeNull();
  });
});
