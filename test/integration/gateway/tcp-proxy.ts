/**
 * A TCP proxy the test starts and stops, between the gateway's Kafka client and the broker:
 * stopping it closes every connection and refuses new ones, an honest Kafka outage seen
 * from the gateway (the shared broker keeps running for the other tests).
 */
import net from 'node:net';
import { Kafka, logLevel } from '../../../streams/kafkajs.ts';

export class TcpProxy {
  private server: net.Server | null = null;
  private readonly conns = new Set<net.Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Listens (on the same port as before after a stop). */
  async start(): Promise<number> {
    const server = net.createServer((client) => {
      const upstream = net.connect({ host: this.targetHost, port: this.targetPort });
      for (const s of [client, upstream]) {
        this.conns.add(s);
        s.on('close', () => this.conns.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
    return this.port;
  }

  /** Closes the listener and cuts every open connection. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.conns) s.destroy();
    this.conns.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * A kafkajs client whose every broker connection (bootstrap and the addresses the broker
   * advertises) goes through this proxy: one broker, so the target is unambiguous.
   */
  kafka(clientId: string): Kafka {
    return new Kafka({
      clientId,
      brokers: [`127.0.0.1:${this.port}`],
      connectionTimeout: 1000,
      requestTimeout: 5000,
      retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
      logLevel: logLevel.NOTHING,
      socketFactory: ({ onConnect }) => {
        const s = net.connect({ host: '127.0.0.1', port: this.port }, onConnect);
        s.setKeepAlive(true, 1000);
        return s;
      },
    });
  }
}
