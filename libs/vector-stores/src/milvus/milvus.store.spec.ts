import { EgressPolicy } from '@tapyard/egress';
import { rebindingName } from '../spec-fixtures';
import { MilvusStore } from './milvus.store';

describe('MilvusStore over https', () => {
  it('opens its gRPC channel to the address the egress policy checked, never to a second lookup of the name', async () => {
    const peer = await rebindingName();
    const store = new MilvusStore({ url: `https://localhost:${peer.port}` }, peer.policy);
    try {
      // The channel keeps trying until its deadline: the first ClientHello is what is looked at.
      const probe = store.probe().then(
        () => new Error('the probe succeeded'),
        (e: unknown) => e,
      );
      for (
        let waited = 0;
        peer.checked.connections + peer.other.connections === 0 && waited < 10_000;
        waited += 50
      ) {
        await new Promise((r) => setTimeout(r, 50));
      }
      await store.close();
      await probe;
      // The certificate is still checked against the name: it is the ClientHello's server name.
      expect(peer.checked.serverNames[0]).toBe('localhost');
      expect(peer.other.connections).toBe(0);
    } finally {
      await store.close();
      await peer.close();
    }
  });

  it('checks the port it connects to: 19530 for an http URL that names none', async () => {
    const store = new MilvusStore({ url: 'http://127.0.0.1' }, new EgressPolicy());
    await expect(store.probe()).rejects.toThrow(
      /connection to 127\.0\.0\.1:19530 refused by the egress policy/,
    );
    await store.close();
  });
});
