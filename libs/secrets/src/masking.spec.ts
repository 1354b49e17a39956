import { MASK, maskFields, maskUrlCredentials } from './masking';

describe('secret masking', () => {
  it("masks the spec's five names and the credentials the platform reads under other names", () => {
    const masked = maskFields({
      password: 'a',
      APIKEY: 'b',
      secretKey: 'c',
      token: 'd',
      secret: 'e',
      privateKey: '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----',
      account: 'xy12345',
      user: 'loader',
    });
    expect(masked).toEqual({
      password: MASK,
      APIKEY: MASK,
      secretKey: MASK,
      token: MASK,
      secret: MASK,
      privateKey: MASK,
      account: 'xy12345',
      user: 'loader',
    });
  });

  it('masks the password of a URL, whatever the field is called, and keeps the rest of it', () => {
    expect(
      maskFields({
        connectionString: 'postgres://vec:S3cret@db:5432/vectors',
        url: 'https://admin:pw@qdrant.internal:6333',
        host: 'db.internal',
      }),
    ).toEqual({
      connectionString: `postgres://vec:${MASK}@db:5432/vectors`,
      url: `https://admin:${MASK}@qdrant.internal:6333`,
      host: 'db.internal',
    });
  });

  it.each([
    // Passwords holding the characters that end a userinfo or an authority.
    ['postgres://vec:p@ss@db/x', `postgres://vec:${MASK}@db/x`],
    ['postgres://vec:p/ss@db/x', `postgres://vec:${MASK}@db/x`],
    ['postgres://vec:p?ss#x@db/x', `postgres://vec:${MASK}@db/x`],
    ['redis://:p/ss@host:6379', `redis://:${MASK}@host:6379`],
    ['https://u:p\\ss@host/', `https://u:${MASK}@host/`],
    [
      'mongodb://u:pw@h1:27017,h2:27017/db?replicaSet=rs',
      `mongodb://u:${MASK}@h1:27017,h2:27017/db?replicaSet=rs`,
    ],
    ['redis://:pw@host', `redis://:${MASK}@host`],
    // Credentials in the query.
    [
      'postgresql://db/vectors?user=vec&password=pw&sslmode=require',
      `postgresql://db/vectors?user=vec&password=${MASK}&sslmode=require`,
    ],
    ['https://api.example.com/v1?Token=abc#top', `https://api.example.com/v1?Token=${MASK}#top`],
  ])('%s', (value, expected) => {
    expect(maskUrlCredentials(value)).toBe(expected);
  });

  it.each([
    'https://host/a@b',
    'https://host:8080/a@b?x=1',
    'postgres://vec@db/vectors',
    'kafka-1:9092,kafka-2:9092',
    'not a url: user:pw@host',
    '',
  ])('leaves %j as it is', (value) => {
    expect(maskUrlCredentials(value)).toBe(value);
  });
});
