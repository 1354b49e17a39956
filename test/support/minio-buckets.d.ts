import type { Client } from 'minio';

export function storeClient(store: {
  OBJECT_STORE_ENDPOINT: string;
  OBJECT_STORE_ACCESS_KEY: string;
  OBJECT_STORE_SECRET_KEY: string;
}): Client;

export function forceRemoveBucket(client: Client, bucketName: string): Promise<void>;
