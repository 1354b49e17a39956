import { maskUrlCredentials } from './url-credentials';

/**
 * The same replacement by regex (quadratic on long runs of scheme characters): a userinfo runs to the
 * last `@` of the URL's token when an `@` stands before the first `/`, or when what stands there
 * cannot be host[:port] (a `:` not followed by digits alone, nor ending in `]`, before any `?` or `#`).
 */
const NOT_HOST_PORT = '[^\\s/@?#]*:(?=[^\\s/@?#:]*[^\\s/@?#:\\d])[^\\s/@?#:]*[^\\s/@?#:\\]]';
const BY_REGEX = new RegExp(
  `([a-z][a-z0-9+.-]*://)([^\\s/@]*@(?:[^\\s"'\`<>]*@)?|${NOT_HOST_PORT}(?:[?#][^\\s/@]*)?/[^\\s"'\`<>]*@)`,
  'gi',
);
const byRegex = (text: string) =>
  text.replace(BY_REGEX, (whole, scheme: string, userinfo: string) =>
    userinfo.length > 1 ? `${scheme}***@` : whole,
  );

describe('maskUrlCredentials', () => {
  it('masks the credentials of URLs, and nothing else', () => {
    const cases: [string, string][] = [
      ['postgres://loader:s3cr3t@db:5432/x', 'postgres://***@db:5432/x'],
      ['a HTTPS://u@h and svn+ssh://me:pw@git/x', 'a HTTPS://***@h and svn+ssh://***@git/x'],
      ['1http://u:p@h', '1http://***@h'],
      ['a://b://c:pw@h', 'a://b://***@h'],
      ['http://host/a@b', 'http://host/a@b'],
      ['x://@h', 'x://@h'],
      ['http://u\u00a0p@h', 'http://u\u00a0p@h'],
      ['123://u@h', '123://u@h'],
      ['://u@h', '://u@h'],
      ['no url', 'no url'],
      // A password holding `@`, `:`, `/`, `?` or `#`: the userinfo runs to the URL's last `@`.
      ['redis://:p@ss@host:6379', 'redis://***@host:6379'],
      ['postgres://u:pa@ss/w@db/x', 'postgres://***@db/x'],
      ['postgres://u:p:a:ss@db/x', 'postgres://***@db/x'],
      ['postgres://u:pa/ss@db/x', 'postgres://***@db/x'],
      ['redis://:p/ss@host:6379', 'redis://***@host:6379'],
      ['postgres://u:p?s#s@db/x', 'postgres://***@db/x'],
      ['x://@p@h', 'x://***@h'],
      // Several URLs in one text, each masked on its own; a quote or whitespace ends a URL.
      [
        'from mysql://a:b@c@h1/x to redis://:d@e@h2 via http://h3/y@z',
        'from mysql://***@h1/x to redis://***@h2 via http://h3/y@z',
      ],
      ['{"url":"postgres://u:p@db/x","mail":"me@x.io"}', '{"url":"postgres://***@db/x","mail":"me@x.io"}'],
      // No credentials: a path's `@`, a port, an IPv6 literal, an e-mail address in plain text.
      ['https://registry.npmjs.org/@types/node', 'https://registry.npmjs.org/@types/node'],
      ['http://host:8080/a@b', 'http://host:8080/a@b'],
      ['http://[::1]/a@b and http://[::1]:80/c@d', 'http://[::1]/a@b and http://[::1]:80/c@d'],
      ['http://host?q=a:b/c@d', 'http://host?q=a:b/c@d'],
      ['write to a@b.com', 'write to a@b.com'],
      [
        'see https://docs.example.com/x or write to a@b.com',
        'see https://docs.example.com/x or write to a@b.com',
      ],
    ];
    for (const [text, want] of cases) {
      expect(maskUrlCredentials(text, '***')).toBe(want);
      expect(byRegex(text)).toBe(want);
    }
  });

  it('answers as the regex did on random text (seeded)', () => {
    const pieces = [
      'a',
      'Z',
      '1',
      '+',
      '.',
      '-',
      ':',
      '/',
      '@',
      ' ',
      '\u00a0',
      '\u017f',
      '\u212a',
      'é',
      'x',
      '://',
      'u:p@',
      '"',
      "'",
      '?',
      '#',
      '[',
      ']',
      '9',
    ];
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 5000; round++) {
      const text = Array.from({ length: rand(30) }, () => pieces[rand(pieces.length)]).join('');
      expect(maskUrlCredentials(text, '***')).toBe(byRegex(text));
    }
  });

  // Audit finding 10: the regex retried every start of a run of scheme characters, so 40,000 of them
  // took 1.7 s of the API's thread; one pass takes well under a millisecond.
  it('reads 50,000 scheme characters, with or without a :// after them, in well under 100 ms of CPU', () => {
    const run = 'a1+.-'.repeat(10_000);
    const started = process.cpuUsage();
    expect(maskUrlCredentials(run, '***')).toBe(run);
    expect(maskUrlCredentials(`${run}://${'x'.repeat(1000)}`, '***')).toHaveLength(51_003);
    expect(maskUrlCredentials(`${run}://u:p@h`, '***')).toBe(`${run}://***@h`);
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(100);
  });

  // Reading a token again from each of its `@`s or `://`s would be quadratic.
  it('reads 100,000 to 400,000 characters of `@`s, of `://`s, or of both once', () => {
    expect(maskUrlCredentials(`a://${'b@'.repeat(50_000)}h`, '***')).toBe('a://***@h');
    const nested = 'a://u:p/'.repeat(50_000);
    expect(maskUrlCredentials(nested, '***')).toBe(nested);
    expect(maskUrlCredentials(`${nested}@h`, '***')).toBe('a://***@h');
    const hosts = 'a://h/'.repeat(50_000);
    expect(maskUrlCredentials(`${hosts}@h`, '***')).toBe(`${hosts}@h`);
    expect(maskUrlCredentials(`${'a://b@'.repeat(25_000)}h`, '***')).toBe('a://***@h');
  });

  // Jest's timeout cannot stop synchronous work (re-reading each token from every `://` took 12 s on
  // the input above, and passed), so linearity is checked as growth: 8 times the input takes about 8
  // times the CPU (a quadratic pass, 64 times), the least of five runs each.
  it('takes about 8 times the work for 8 times the input', () => {
    const hostile = (n: number) => `${'a://u:p/'.repeat(n)} a://${'b@'.repeat(n)}h ${'a://h/'.repeat(n)}@h`;
    const cpu = (text: string) => {
      let least = Infinity;
      for (let run = 0; run < 5; run++) {
        const started = process.cpuUsage();
        maskUrlCredentials(text, '***');
        const used = process.cpuUsage(started);
        least = Math.min(least, used.user + used.system);
      }
      return Math.max(least, 1);
    };
    const small = hostile(5_000);
    const large = hostile(40_000);
    expect(maskUrlCredentials(small, '***')).toBe(
      `${'a://u:p/'.repeat(5_000)} a://***@h ${'a://h/'.repeat(5_000)}@h`,
    );
    expect(cpu(large) / cpu(small)).toBeLessThan(24);
  });
});
