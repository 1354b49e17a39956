import { connect as tlsConnect } from 'node:tls';
import type { Client, IFrame, IStompSocket } from '@stomp/stompjs';
import type { TCPWrapper } from '@stomp/tcp-wrapper';
import { ServiceUnavailableError, ValidationError } from '@tapyard/core';
import { EgressPolicy, EgressRefused } from '@tapyard/egress';
import { cleanUp } from '../sinks/sink';
import { DestinationErrorCode } from '../destination-errors';

/** The broker a secret names: `stomp://host:port` or `stomp+ssl://host:port`, with credentials. */
export interface BrokerAddress {
  host: string;
  port: number;
  tls: boolean;
  username: string;
  password: string;
}

export function brokerOf(secretName: string, fields: Record<string, string>): BrokerAddress {
  let url: URL;
  try {
    url = new URL(fields.url ?? '');
  } catch {
    throw new ValidationError(`secret '${secretName}' needs a 'url' like stomp://host:61613`).coded(
      DestinationErrorCode.InvalidSecret,
    );
  }
  if (url.protocol !== 'stomp:' && url.protocol !== 'stomp+ssl:') {
    throw new ValidationError(`secret '${secretName}' url must be stomp:// or stomp+ssl://`).coded(
      DestinationErrorCode.InvalidSecret,
    );
  }
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : 61613,
    tls: url.protocol === 'stomp+ssl:',
    username: fields.username ?? '',
    password: fields.password ?? '',
  };
}

/** TCPWrapper over TLS, to the vetted address, with the broker's name for the certificate check. */
function tlsWrapper(
  Wrapper: typeof TCPWrapper,
  address: string,
  port: number,
  servername: string,
): IStompSocket {
  // The base constructor opens the socket: the name is captured here, not set on the instance after.
  class TlsWrapper extends Wrapper {
    protected override getSocket(p: number, h: string) {
      return tlsConnect({ host: h, port: p, servername });
    }
  }
  return new TlsWrapper(address, port);
}

/**
 * A STOMP connection to the broker at the address the egress policy vetted (TAP_EGRESS_ALLOW for a
 * private one). Rejects within `timeoutMs` naming ActiveMQ when it cannot connect or log in.
 */
export async function openStomp(
  broker: BrokerAddress,
  policy: EgressPolicy,
  timeoutMs = 5000,
): Promise<Client> {
  let address: string;
  try {
    address = (await policy.check(broker.host, broker.port)).address;
  } catch (err) {
    if (err instanceof EgressRefused)
      throw new ValidationError(`the ActiveMQ broker is not allowed: ${err.message}`).coded(
        DestinationErrorCode.EndpointRefused,
      );
    throw err;
  }
  const where = `${broker.host}:${broker.port}`;
  // Loaded by the first ActiveMQ load: a process that never loads there never pays for them.
  const [{ Client }, { TCPWrapper }] = await Promise.all([
    import('@stomp/stompjs'),
    import('@stomp/tcp-wrapper'),
  ]);
  return new Promise<Client>((resolve, reject) => {
    let settled = false;
    const client = new Client({
      webSocketFactory: (): IStompSocket =>
        broker.tls
          ? tlsWrapper(TCPWrapper, address, broker.port, broker.host)
          : new TCPWrapper(address, broker.port),
      connectHeaders: { login: broker.username, passcode: broker.password, host: broker.host },
      reconnectDelay: 0,
      heartbeatIncoming: 0,
      heartbeatOutgoing: 0,
      // Received frames may carry message bodies; nothing is logged.
      debug: () => undefined,
    });
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // A broker that went silent would never answer the DISCONNECT a graceful close waits for.
      void client.deactivate({ force: true });
      reject(
        new ServiceUnavailableError(
          'activemq',
          `the ActiveMQ broker at ${where} is unavailable: ${why}`,
        ).coded(DestinationErrorCode.Unavailable),
      );
    };
    const timer = setTimeout(() => fail(`no STOMP CONNECTED within ${timeoutMs} ms`), timeoutMs);
    client.onConnect = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(client);
    };
    client.onStompError = (frame: IFrame) =>
      fail(frame.headers.message ?? 'the broker refused the connection');
    client.onWebSocketError = (ev: { message?: unknown }) => fail(String(ev?.message ?? 'connection error'));
    client.onWebSocketClose = () => fail('the connection closed');
    client.activate();
  });
}

/**
 * Closes the session: a DISCONNECT whose receipt is awaited `timeoutMs` at most (a silent broker never
 * sends it), then the connection is dropped.
 */
export async function closeStomp(client: Client, timeoutMs: number): Promise<void> {
  await cleanUp(client.deactivate(), timeoutMs);
  await cleanUp(client.deactivate({ force: true }), timeoutMs);
}
