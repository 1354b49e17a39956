import { Client } from 'minio';
import { TEST_OBJECT_STORE } from './env';

/** A direct client for the test MinIO, to look behind the platform's back. */
export class TestMinio {
  readonly client: Client;

  constructor() {
    const u = new URL(TEST_OBJECT_STORE.OBJECT_STORE_ENDPOINT);
    this.client = new Client({
      endPoint: u.hostname,
      port: Number(u.port),
      useSSL: false,
      accessKey: TEST_OBJECT_STORE.OBJECT_STORE_ACCESS_KEY,
      secretKey: TEST_OBJECT_STORE.OBJECT_STORE_SECRET_KEY,
    });
  }

  async read(bucket: string, key: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const c of await this.client.getObject(bucket, key)) parts.push(c as Buffer);
    return Buffer.concat(parts);
  }

  /** Keys under a prefix, sorted. */
  async keys(bucket: string, prefix: string): Promise<string[]> {
    const out: string[] = [];
    for await (const o of this.client.listObjectsV2(bucket, prefix, true))
      out.push((o as { name: string }).name);
    return out.sort();
  }
}
