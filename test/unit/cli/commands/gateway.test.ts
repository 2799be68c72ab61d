import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gatewayAddress } from '../../../../cli/commands/gateway.ts';
import { loadConfig } from '../../../../cli/config.ts';

describe('turnstream gateway address', () => {
  const config = loadConfig({ PORT: '8000', HOST: '0.0.0.0' }, '/tmp');

  it('PORT and HOST without flags', () => {
    assert.deepEqual(gatewayAddress(config, {}), { port: 8000, host: '0.0.0.0' });
  });

  it('--port and --host override them', () => {
    assert.deepEqual(gatewayAddress(config, { port: '9000', host: '127.0.0.1' }), { port: 9000, host: '127.0.0.1' });
  });

  it('a --port that is not a port is rejected, named', () => {
    assert.throws(
      () => gatewayAddress(config, { port: 'eighty' }),
      /invalid flags: --port="eighty": expected an integer >= 0 and <= 65535/,
    );
  });
});
