/**
 * TLS of the clients of Kafka, the registry and ClickHouse: whom they trust, reading a CA file
 * (checked when it is read), and telling a certificate the client does not trust from a network
 * failure (the first is a setting to fix, the second worth retrying).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ErrorCodes, TurnstreamError } from './errors.ts';

/** Whom a TLS client trusts. */
export interface TlsOptions {
  /**
   * PEM of the certificate authorities to trust instead of Node's default roots.
   * @default undefined = Node's roots (its bundled Mozilla store, plus NODE_EXTRA_CA_CERTS)
   */
  ca?: string;
  /**
   * The setting that names the CA, for messages: `KAFKA_TLS_CA_FILE=/etc/ca.pem`, or the
   * variable alone when it is unset. @default 'the CA setting'
   */
  setting?: string;
}

/**
 * Reads a CA file: one or more PEM certificates. A file that cannot be read or holds no
 * certificate is a setting error naming the variable and the path.
 */
export function readCaFile(path: string, setting: string): TlsOptions {
  const bad = (why: string, cause?: unknown): TurnstreamError =>
    new TurnstreamError(ErrorCodes.INVALID_INPUT, `${setting}=${path}: ${why}`, { param: setting, retriable: false, cause });
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw bad(`cannot read it (${(err as NodeJS.ErrnoException).code})`, err);
  }
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw bad('no PEM certificate in it (-----BEGIN CERTIFICATE-----)');
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw bad(`not a valid certificate (${(err as Error).message})`, err);
    }
  }
  return { ca: pem, setting: `${setting}=${path}` };
}

/** Node's codes for a peer certificate the client does not accept. */
const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

/** The first `code` along an error's causes (kafkajs nests them in `cause` or `originalError`). */
export function errorCodeOf(err: unknown, accept: (code: string) => boolean): { code: string; message: string } | undefined {
  let e = err as { code?: unknown; message?: unknown; cause?: unknown; originalError?: unknown } | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    if (typeof e.code === 'string' && accept(e.code)) return { code: e.code, message: String(e.message ?? e.code) };
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return undefined;
}

/**
 * When `err` is a TLS client's refusal of the server's certificate: one line saying whose
 * certificate, why, and which setting names the CA to trust; else undefined.
 */
export function untrustedCertificate(err: unknown, server: string, tls: TlsOptions | undefined): TurnstreamError | undefined {
  const found = errorCodeOf(err, (code) => CERTIFICATE_CODES.has(code));
  if (!found) return undefined;
  const setting = tls?.setting ?? 'the CA setting';
  const name = setting.split('=')[0];
  const advice =
    found.code === 'ERR_TLS_CERT_ALTNAME_INVALID' || found.code === 'HOSTNAME_MISMATCH'
      ? `it is not issued for that address: connect to a name or address it lists`
      : found.code === 'CERT_HAS_EXPIRED' || found.code === 'CERT_NOT_YET_VALID'
        ? 'it is outside its validity dates'
        : tls?.ca
          ? `it is not signed by the CA in ${setting}`
          : `Node's default roots do not trust it: set ${name} to the CA that signed it`;
  const trust = !['ERR_TLS_CERT_ALTNAME_INVALID', 'HOSTNAME_MISMATCH', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID'].includes(found.code);
  return new TurnstreamError(
    ErrorCodes.INVALID_INPUT,
    `${server} has a TLS certificate this client does not trust (${found.message}): ${advice}`,
    { param: trust ? name : undefined, retriable: false, cause: err },
  );
}
