import { spawnSync } from 'node:child_process';
import { ErrorCodes, TurnstreamError, findExecutable } from '../core/index.ts';

/** A program the local stack needs. */
export type Prerequisite = 'java' | 'mvn' | 'clickhouse-server' | 'openssl';

/** Something missing or unusable, with what was found instead. */
export interface MissingPrerequisite {
  name: Prerequisite;
  /** What is wrong when the program exists but cannot be used (e.g. `java 11 found`). */
  problem?: string;
}

/** Java major version Kafka 4 brokers and Apicurio 3 require. */
export const MIN_JAVA_MAJOR = 17;

const WHY: Record<Prerequisite, string> = {
  java: `Java ${MIN_JAVA_MAJOR}+ runs Kafka and the Schema Registry`,
  mvn: 'Maven fetches Kafka and Apicurio from Maven Central (once; cached in ~/.m2)',
  'clickhouse-server': 'ClickHouse stores the analytics (run as root where apt-get exists, turnstream installs it itself)',
  openssl: "openssl makes a secured stack's CA and certificate (once)",
};

const FIX: Record<Prerequisite, string> = {
  java: 'apt-get install -y openjdk-17-jre-headless',
  mvn: 'apt-get install -y maven',
  'clickhouse-server': 'apt-get install -y clickhouse-server clickhouse-client',
  openssl: 'apt-get install -y openssl',
};

const ENDPOINT_HINT: Partial<Record<Prerequisite, string>> = {
  java: 'KAFKA_BROKERS and SCHEMA_REGISTRY_URL',
  'clickhouse-server': 'CLICKHOUSE_URL',
};

/**
 * The one message for everything missing (pure, so it is unit-tested): what is missing,
 * why it is needed, the command that installs it, and how to use existing services instead.
 */
export function prerequisiteMessage(missing: readonly MissingPrerequisite[]): string {
  const lines = missing.map((m) => `  - ${m.name}${m.problem ? ` (${m.problem})` : ' (not found)'}: ${WHY[m.name]}. Fix: ${FIX[m.name]}`);
  const hints = [...new Set(missing.map((m) => ENDPOINT_HINT[m.name]).filter((h): h is string => Boolean(h)))];
  const install = [...new Set(missing.map((m) => FIX[m.name]))].join(' && ');
  return [
    `the local stack cannot start: ${missing.length === 1 ? 'a program is' : `${missing.length} programs are`} missing.`,
    ...lines,
    `Install: ${install}`,
    ...(hints.length ? [`Or point turnstream at running services with ${hints.join(' / ')}.`] : []),
  ].join('\n');
}

export { findExecutable };

/** Parses `java -version` output: `openjdk version "17.0.15"` → 17, `"1.8.0_392"` → 8. */
export function parseJavaMajor(versionOutput: string): number | undefined {
  const m = /version "(\d+)(?:\.(\d+))?/.exec(versionOutput);
  if (!m) return undefined;
  const first = Number(m[1]);
  return first === 1 && m[2] ? Number(m[2]) : first;
}

/** What `checkPrerequisites` should look for. */
export interface PrerequisiteNeeds {
  /** `java` executable to check (Kafka or the registry will be started). */
  java?: string;
  /** `mvn` executable to check (a download is still needed). */
  mvn?: string;
  /** ClickHouse server executable to check, or `true` to search the usual names. */
  clickhouse?: string | true;
  /** `openssl` (a secured stack's certificates are made). */
  openssl?: true;
}

/** The ClickHouse server program and the arguments that precede `--config-file`. */
export interface ClickhouseCommand {
  binary: string;
  args: string[];
}

/** Finds `clickhouse-server`, or the single `clickhouse` binary run as `clickhouse server`. */
export function findClickhouse(binary?: string): ClickhouseCommand | undefined {
  const names = binary ? [binary] : ['clickhouse-server', 'clickhouse'];
  for (const name of names) {
    const found = findExecutable(name);
    if (found) return { binary: found, args: /clickhouse$/.test(found) ? ['server'] : [] };
  }
  return undefined;
}

/**
 * Checks every needed program at once and throws ONE PREREQUISITE error listing all that
 * are missing, so a fresh machine is fixed in one go.
 */
export function checkPrerequisites(needs: PrerequisiteNeeds): void {
  const missing: MissingPrerequisite[] = [];
  if (needs.java !== undefined) {
    const java = findExecutable(needs.java);
    if (!java) missing.push({ name: 'java', problem: needs.java === 'java' ? undefined : `${needs.java} not found` });
    else {
      const out = spawnSync(java, ['-version'], { encoding: 'utf8', timeout: 30_000 });
      const major = parseJavaMajor(`${out.stderr ?? ''}${out.stdout ?? ''}`);
      if (major === undefined || major < MIN_JAVA_MAJOR) {
        missing.push({
          name: 'java',
          problem: major === undefined ? `${java} -version did not answer` : `java ${major} found, ${MIN_JAVA_MAJOR}+ needed`,
        });
      }
    }
  }
  if (needs.mvn !== undefined && !findExecutable(needs.mvn)) missing.push({ name: 'mvn' });
  if (needs.openssl && !findExecutable('openssl')) missing.push({ name: 'openssl' });
  if (needs.clickhouse !== undefined && !findClickhouse(needs.clickhouse === true ? undefined : needs.clickhouse)) {
    missing.push({ name: 'clickhouse-server' });
  }
  if (missing.length > 0) throw new TurnstreamError(ErrorCodes.PREREQUISITE, prerequisiteMessage(missing));
}
