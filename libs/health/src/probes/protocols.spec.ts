import { kafkaApiVersionsRequest, parseKafkaApiVersionsResponse } from './kafka.probe';
import { parseStompAnswer, stompConnectFrame } from './stomp.probe';
import { splitHostPort } from './tcp';

describe('Kafka ApiVersions framing', () => {
  it('encodes a v0 request with size prefix, api key 18 and the correlation id', () => {
    const req = kafkaApiVersionsRequest(42, 'c');
    expect(req.readInt32BE(0)).toBe(req.length - 4);
    expect(req.readInt16BE(4)).toBe(18);
    expect(req.readInt16BE(6)).toBe(0);
    expect(req.readInt32BE(8)).toBe(42);
    expect(req.readInt16BE(12)).toBe(1);
    expect(req.subarray(14).toString()).toBe('c');
  });

  it('accepts a matching answer and rejects others', () => {
    const ok = Buffer.alloc(10);
    ok.writeInt32BE(6, 0);
    ok.writeInt32BE(42, 4);
    ok.writeInt16BE(0, 8);
    expect(() => parseKafkaApiVersionsResponse(ok, 42)).not.toThrow();
    expect(() => parseKafkaApiVersionsResponse(ok, 43)).toThrow(/not a Kafka broker/);
    const err = Buffer.from(ok);
    err.writeInt16BE(35, 8);
    expect(() => parseKafkaApiVersionsResponse(err, 42)).toThrow(/error code 35/);
    expect(() => parseKafkaApiVersionsResponse(Buffer.from('-ERR'), 42)).toThrow(/short answer/);
  });
});

describe('STOMP CONNECT', () => {
  it('sends credentials only when a user is set, NUL-terminated', () => {
    const f = stompConnectFrame('u', 'p', 'h').toString();
    expect(f.startsWith('CONNECT\n')).toBe(true);
    expect(f).toContain('login:u\npasscode:p');
    expect(f.endsWith('\n\n\0')).toBe(true);
    expect(stompConnectFrame('', '', 'h').toString()).not.toContain('login');
  });

  it('reads CONNECTED as up and ERROR with its reason', () => {
    expect(() => parseStompAnswer(Buffer.from('CONNECTED\nversion:1.2\n\n\0'))).not.toThrow();
    expect(() => parseStompAnswer(Buffer.from('ERROR\nmessage:Authentication failed\n\n\0'))).toThrow(
      /refused the STOMP connection: Authentication failed/,
    );
    expect(() => parseStompAnswer(Buffer.from('HTTP/1.1 400 Bad Request\r\n'))).toThrow(/not STOMP/);
  });
});

describe('splitHostPort', () => {
  it('splits host:port, IPv6 and defaults', () => {
    expect(splitHostPort('127.0.0.1:9092', 1)).toEqual({ host: '127.0.0.1', port: 9092 });
    expect(splitHostPort('[::1]:9092', 1)).toEqual({ host: '::1', port: 9092 });
    expect(splitHostPort('broker', 9092)).toEqual({ host: 'broker', port: 9092 });
  });
});
