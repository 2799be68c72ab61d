/**
 * The apt path for real (the project's machines run as root with Debian's packages): what the
 * stack runs on a machine without ClickHouse leaves a server program it finds. On a machine that
 * has it already, apt-get keeps it as it is, so this changes nothing here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canUseApt, installClickhouseWithApt } from '../../../infra/clickhouse-install.ts';
import { findClickhouse } from '../../../infra/prerequisites.ts';

test("apt-get installs Debian's ClickHouse, and the stack then finds its server", { timeout: 300_000 }, async () => {
  assert.ok(canUseApt(), 'runs as root where apt-get exists, as the project machines and CI do');
  await installClickhouseWithApt();
  const found = findClickhouse();
  assert.ok(found, 'a clickhouse server program is installed');
  assert.match(found.binary, /clickhouse(-server)?$/);
});
