import { ServiceUnavailableError } from '@tapyard/core';
import { rebindingName } from '../spec-fixtures';
import { ChromaStore } from './chroma.store';

describe('ChromaStore over https', () => {
  it('connects to the address the egress policy checked, never to a second lookup of the name', async () => {
    const peer = await rebindingName();
    try {
      const store = new ChromaStore({ url: `https://localhost:${peer.port}` }, peer.policy);
      for (let call = 0; call < 2; call++) {
        // The cached client's later calls too: each connects where its own check pointed.
        await expect(store.probe()).rejects.toBeInstanceOf(ServiceUnavailableError);
      }
      await store.close();
      // The certificate is still checked against the name: it is the ClientHello's server name.
      expect(peer.checked.serverNames).toEqual(['localhost', 'localhost']);
      expect(peer.other.connections).toBe(0);
    } finally {
      await peer.close();
    }
  });
});
