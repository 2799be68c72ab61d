/** Connections to the brokers counted from /proc (bench/connections.ts), on real sockets of this process. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { brokerConnections, brokerPorts } from '../../../bench/connections.ts';

test('brokerPorts: the ports of a broker list', () => {
  assert.deepEqual(brokerPorts('127.0.0.1:9092, kafka-2:19092'), new Set([9092, 19092]));
});

test('brokerConnections: the established connections of a process to the given ports, and only those (null where there is no /proc)', async () => {
  const server = createServer(() => undefined);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const ports = new Set([port]);
  if (process.platform !== 'linux') {
    assert.equal(brokerConnections(process.pid, ports), null);
    server.close();
    return;
  }
  assert.equal(brokerConnections(process.pid, ports), 0);
  const sockets: Socket[] = [];
  for (let i = 0; i < 3; i++) {
    const s = createConnection({ port, host: '127.0.0.1' });
    await once(s, 'connect');
    sockets.push(s);
  }
  assert.equal(brokerConnections(process.pid, ports), 3);
  assert.equal(brokerConnections(process.pid, new Set([port + 1])), 0, 'another port counts none');
  for (const s of sockets) s.destroy();
  server.close();
});
