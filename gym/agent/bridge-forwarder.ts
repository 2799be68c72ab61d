/**
 * The forwarder inside the sandbox: a loopback TCP port (the sandbox's own 127.0.0.1, nothing of
 * the host's) piped to the gateway bridge's unix socket. Run with `node -e` from the environment:
 * `TS_FWD_PORT`, `TS_FWD_SOCKET`, and `TS_FWD_READY` (a file written once it listens).
 */
export const FORWARDER_SOURCE = `
const net = require('node:net');
const fs = require('node:fs');
const { TS_FWD_PORT: port, TS_FWD_SOCKET: socket, TS_FWD_READY: ready } = process.env;
const server = net.createServer((c) => {
  const u = net.connect(socket);
  c.pipe(u);
  u.pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
});
server.on('error', (err) => { process.stderr.write('gateway forwarder: ' + err.message + '\\n'); process.exit(1); });
server.listen(Number(port), '127.0.0.1', () => fs.writeFileSync(ready, ''));
`;
