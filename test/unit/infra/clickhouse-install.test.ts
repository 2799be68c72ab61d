/** When the stack installs Debian's ClickHouse by itself, and how (apt-get, driven by a recording runner). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { installClickhouseWithApt, shouldInstallClickhouse, type Runner } from '../../../infra/clickhouse-install.ts';

const base = { needed: true, found: false, binaryGiven: false, canApt: true };

describe('installing ClickHouse on a fresh machine', () => {
  it('only when the stack needs it, none is found, none was named, apt-get is there as root, and it is not turned off', () => {
    assert.equal(shouldInstallClickhouse(base), true);
    for (const over of [{ needed: false }, { found: true }, { binaryGiven: true }, { canApt: false }, { enabled: false }]) {
      assert.equal(shouldInstallClickhouse({ ...base, ...over }), false, JSON.stringify(over));
    }
  });

  it('installs the server and client; updates the package lists once when the install fails without them', async () => {
    const calls: string[] = [];
    const script =
      (codes: number[]): Runner =>
      async (cmd, args) => {
        calls.push(`${cmd} ${args.join(' ')}`);
        return { code: codes.shift() ?? 0, output: 'E: Unable to locate package clickhouse-server' };
      };
    await installClickhouseWithApt(script([0]));
    assert.deepEqual(calls, [
      'apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends clickhouse-server clickhouse-client',
    ]);
    calls.length = 0;
    await installClickhouseWithApt(script([100, 0, 0]));
    assert.deepEqual(
      calls.map((c) => c.split(' ')[3]),
      ['install', 'update', 'install'],
    );
    await assert.rejects(installClickhouseWithApt(script([100, 0, 100])), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'TS_ERR_PREREQUISITE');
      assert.match(
        err.message,
        /apt-get could not install clickhouse-server clickhouse-client \(E: Unable to locate package clickhouse-server\)/,
      );
      return true;
    });
  });
});
