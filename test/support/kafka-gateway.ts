/** A gateway test's temporary home and topics of its own on the test stack, with or without the gateway started on them. */
import { after } from 'node:test';
import type { GatewayOptions } from '../../gateway/index.ts';
import { startGateway, tempHome, testKafka, type StartedGateway, type TestKafka } from '../integration/gateway/support.ts';
import { ensureStack, uniquePrefix } from './stack.ts';

export type TempHome = Awaited<ReturnType<typeof tempHome>>;

/** A temporary home (`ts-gw-<name>-…`) and topics under a fresh `gateway-<name>` prefix (turns, feedback, weights). */
export interface GatewayHome {
  home: TempHome;
  k: TestKafka;
}

/** A fresh home and topics; the caller removes the home (`home.cleanup()`). */
export async function gatewayHome(name: string): Promise<GatewayHome> {
  const stack = await ensureStack();
  const home = await tempHome(name);
  try {
    return { home, k: await testKafka(stack, uniquePrefix(`gateway-${name}`)) };
  } catch (err) {
    await home.cleanup();
    throw err;
  }
}

/** Makes homes for the tests of the enclosing suite (or file), each removed after them all. */
export function suiteGatewayHomes(): (name: string) => Promise<GatewayHome> {
  const homes: TempHome[] = [];
  after(async () => {
    for (const h of homes) await h.cleanup();
  });
  return async (name) => {
    const made = await gatewayHome(name);
    homes.push(made.home);
    return made;
  };
}

/** A gateway started on its home and topics; `stop` stops it and removes the home. */
export interface KafkaGateway extends StartedGateway, GatewayHome {
  stop(): Promise<void>;
}

/**
 * `startGateway` (the built-in tiny model unless `options` say otherwise) wired to the fresh
 * topics of `gatewayHome(name)`; `options` may depend on the home's folder.
 */
export async function startKafkaGateway(
  name: string,
  options: Partial<GatewayOptions> | ((homeDir: string) => Partial<GatewayOptions>) = {},
): Promise<KafkaGateway> {
  const { home, k } = await gatewayHome(name);
  try {
    const g = await startGateway({
      home: home.dir,
      kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming },
      ...(typeof options === 'function' ? options(home.dir) : options),
    });
    const stop = async (): Promise<void> => {
      await g.gw.stop();
      await home.cleanup();
    };
    return { ...g, home, k, stop };
  } catch (err) {
    await home.cleanup();
    throw err;
  }
}
