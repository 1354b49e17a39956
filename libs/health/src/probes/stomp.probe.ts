import { splitHostPort, tcpExchange } from './tcp';

export function stompConnectFrame(user: string, password: string, host: string): Buffer {
  const headers = ['accept-version:1.2,1.1', `host:${host}`, 'heart-beat:0,0'];
  if (user) headers.push(`login:${user}`, `passcode:${password}`);
  return Buffer.from(`CONNECT\n${headers.join('\n')}\n\n\0`, 'utf8');
}

/** Reads the broker's first frame: CONNECTED means up; ERROR carries the broker's reason. */
export function parseStompAnswer(frame: Buffer): void {
  const text = frame.toString('utf8').replace(/^\n+/, '');
  const command = text.split('\n', 1)[0].trim();
  if (command === 'CONNECTED') return;
  if (command === 'ERROR') {
    const m = /^message:(.*)$/m.exec(text);
    throw new Error(`broker refused the STOMP connection: ${m ? m[1].trim() : 'no reason given'}`);
  }
  throw new Error('answer is not STOMP: is the URL the broker STOMP port?');
}

export async function probeStomp(
  url: string,
  user: string,
  password: string,
  signal: AbortSignal,
): Promise<void> {
  const u = new URL(url);
  const { host, port } = splitHostPort(u.host, 61613);
  const frame = await tcpExchange(
    host,
    port,
    stompConnectFrame(user, password, host),
    (b) => b.includes(0),
    signal,
  );
  parseStompAnswer(frame);
}
