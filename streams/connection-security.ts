import type { RegistrySecurity } from '../schemas/index.ts';
import type { KafkaSecurity } from './kafka-security.ts';

/**
 * How a service reaches a secured Kafka and registry; read once from the settings (cli/config.ts)
 * and handed to the client factories (`createKafka`, `createEventCodecs`) by every service.
 */
export interface ConnectionSecurity {
  /** TLS and SASL of Kafka. @default plaintext */
  kafka?: KafkaSecurity;
  /** Basic auth and TLS trust of the Schema Registry. @default none */
  registry?: RegistrySecurity;
}
