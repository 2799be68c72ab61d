import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { ErrorCodes, TurnstreamError } from './errors.ts';

/**
 * A password from a setting. Logs (JSON), messages (string), `console.log` and `util.inspect`
 * show `[secret from KAFKA_SASL_PASSWORD]`, never the value: only `reveal()` gives it, where a
 * client library needs it. The value is a private field, so no serializer walks into it.
 */
export class Secret {
  readonly #value: string;
  /** The setting it came from, for messages: `KAFKA_SASL_PASSWORD`, or `KAFKA_SASL_PASSWORD_FILE=/run/secrets/kafka`. */
  readonly setting: string;

  constructor(value: string, setting: string) {
    this.#value = value;
    this.setting = setting;
  }

  /** The value itself: for the client library that sends it, nothing else. */
  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return `[secret from ${this.setting}]`;
  }

  toJSON(): string {
    return this.toString();
  }

  [inspect.custom](): string {
    return this.toString();
  }
}

/**
 * A secret read from a file (one line; the final line break dropped), as `<NAME>_FILE` settings
 * give it: a file that cannot be read or is empty is a setting error naming the variable and the
 * path, never the content.
 */
export function readSecretFile(path: string, setting: string): Secret {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${setting}=${path}: cannot read it (${(err as NodeJS.ErrnoException).code})`, {
      param: setting,
      retriable: false,
      cause: err,
    });
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${setting}=${path}: the file is empty`, { param: setting, retriable: false });
  }
  return new Secret(value, `${setting}=${path}`);
}
