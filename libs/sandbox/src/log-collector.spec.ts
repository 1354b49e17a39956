import { LogCollector, truncateUtf8 } from './log-collector';
import { maskSecrets } from './masking';

describe('LogCollector', () => {
  it('masks a secret split across chunks', () => {
    const logs = new LogCollector(1024, ['s3cret-token']);
    for (const part of ['auth=s3c', 'ret-to', 'ken done\n']) logs.push(Buffer.from(part));
    expect(logs.finish()).toEqual({ logs: 'auth=*** done\n', truncated: false, totalBytes: 23 });
  });

  it('truncates to the cap with a note, masking a secret that straddles the cut', () => {
    const logs = new LogCollector(10, ['abcdefgh']);
    logs.push(Buffer.from('0123456abcdefgh and more text'));
    const { logs: text, truncated } = logs.finish();
    expect(truncated).toBe(true);
    expect(text.startsWith('0123456***')).toBe(true);
    expect(text).not.toContain('abc');
    expect(text).toContain('logs truncated: the script printed 29 bytes; only the first 10 bytes are kept');
  });

  it('keeps bounded memory however much is pushed', () => {
    const logs = new LogCollector(100, []);
    for (let i = 0; i < 1000; i++) logs.push(Buffer.alloc(1000, 'x'));
    expect(logs.totalBytes).toBe(1_000_000);
    expect(logs.finish().logs.length).toBeLessThan(200);
  });

  it('never cuts a UTF-8 character in half', () => {
    expect(truncateUtf8('aé€', 4)).toBe('aé');
    expect(truncateUtf8('aé€', 6)).toBe('aé€');
  });
});

describe('maskSecrets', () => {
  it('masks longer secrets first and ignores values shorter than 3', () => {
    expect(maskSecrets('key=abcdef id=ab', ['abc', 'abcdef', 'ab'])).toBe('key=*** id=ab');
  });
});
