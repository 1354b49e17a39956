// The object-store calls the test runs' bucket clean-up makes, in plain CommonJS: the e2e Jest
// environment (test/environment.js) loads untransformed, and the global setup's sweep
// (sweep-buckets.ts) uses the same two functions.
const { Client } = require('minio');

/** A client for the store of TEST_OBJECT_STORE's shape. */
function storeClient(store) {
  const url = new URL(store.OBJECT_STORE_ENDPOINT);
  return new Client({
    endPoint: url.hostname,
    port: Number(url.port || 80),
    useSSL: url.protocol === 'https:',
    accessKey: store.OBJECT_STORE_ACCESS_KEY,
    secretKey: store.OBJECT_STORE_SECRET_KEY,
  });
}

/**
 * Removes a bucket with its objects in one request (MinIO's `x-minio-force-delete`); the client has no
 * option for it, but its request method takes headers.
 */
function forceRemoveBucket(client, bucketName) {
  return client.makeRequestAsyncOmit(
    { method: 'DELETE', bucketName, headers: { 'x-minio-force-delete': 'true' } },
    '',
    [204],
  );
}

module.exports = { storeClient, forceRemoveBucket };
