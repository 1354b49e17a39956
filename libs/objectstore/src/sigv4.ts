import { createHash, createHmac } from 'node:crypto';

/** Headers S3 clients leave unsigned (a proxy or browser may rewrite them); the rest are signed. */
const UNSIGNED = new Set(['authorization', 'content-length', 'content-type', 'user-agent']);

/**
 * AWS Signature Version 4 for the staging data path's requests (S3Requests). The signing key is an HMAC
 * chain over the secret, the day, the region and the service: the same for every request of a day, so it
 * is derived once per day instead of four HMACs per request. The request date is formatted from the
 * clock's seconds, without a regular expression per request.
 */
export class SigV4 {
  private day = '';
  private key: Buffer = Buffer.alloc(0);

  constructor(
    private readonly accessKey: string,
    private readonly secretKey: string,
    private readonly region: string,
    private readonly service = 's3',
  ) {}

  /**
   * The `authorization` header of a request whose `headers` (lowercase names, `x-amz-date` among them,
   * as `amzDate` makes it) are sent as given; `path` is already URI-encoded and has no query.
   */
  authorization(method: string, path: string, headers: Record<string, string>, payloadHash: string): string {
    const stamp = headers['x-amz-date'];
    const day = stamp.slice(0, 8);
    const names = Object.keys(headers)
      .filter((n) => !UNSIGNED.has(n))
      .sort();
    let canonicalHeaders = '';
    for (const n of names) canonicalHeaders += `${n}:${headers[n].trim().replace(/ +/g, ' ')}\n`;
    const signed = names.join(';');
    const canonical = `${method}\n${path}\n\n${canonicalHeaders}\n${signed}\n${payloadHash}`;
    const scope = `${day}/${this.region}/${this.service}/aws4_request`;
    const toSign = `AWS4-HMAC-SHA256\n${stamp}\n${scope}\n${createHash('sha256').update(canonical).digest('hex')}`;
    const signature = createHmac('sha256', this.signingKey(day)).update(toSign).digest('hex');
    return `AWS4-HMAC-SHA256 Credential=${this.accessKey}/${scope}, SignedHeaders=${signed}, Signature=${signature}`;
  }

  private signingKey(day: string): Buffer {
    if (day !== this.day) {
      const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
      const dated = hmac(`AWS4${this.secretKey}`, day);
      this.key = hmac(hmac(hmac(dated, this.region), this.service), 'aws4_request');
      this.day = day;
    }
    return this.key;
  }
}

/** `YYYYMMDDTHHMMSSZ`, the form `x-amz-date` takes. */
export function amzDate(d: Date): string {
  const two = (n: number) => (n < 10 ? `0${n}` : `${n}`);
  return (
    `${d.getUTCFullYear()}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}` +
    `T${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}Z`
  );
}
