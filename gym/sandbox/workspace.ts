/**
 * A sandbox's temporary folder on the host, `turnstream-sandbox-<pid>-…` (the pid of the process
 * that made it, see reap-orphans.ts): `workspace/` (seen as /workspace inside, where
 * commands run), `tmp/` (seen as /tmp) and `root/` (where the unshare sandbox builds its root).
 * The parent reads and writes workspace files itself, confined to the workspace: a path is
 * relative, without `..`, and no symlink on the way may lead out. Each opened file is checked
 * again through /proc/self/fd before a byte is read or written, so a symlink swapped in after
 * the check is refused too (commands run in namespaces that die with them, so between commands
 * nothing in the sandbox can swap anything).
 */
import { constants as fsConstants } from 'node:fs';
import { chmod, chown, lstat, mkdir, mkdtemp, open, readlink, realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { ErrorCodes, invalidInput, TurnstreamError } from '../../core/index.ts';
import { boxPrefix } from './reap-orphans.ts';
import { removeTree } from './remove-tree.ts';

/**
 * A workspace path made safe (pure): relative, `/`-separated, without `.`, `..` or empty parts.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for an absolute path, `..`, a NUL byte or no path
 */
export function confinePath(path: string): string {
  if (typeof path !== 'string' || path.length === 0) throw invalidInput('a workspace path must be a non-empty string', 'path');
  if (path.includes('\0')) throw invalidInput('a workspace path may not contain a NUL byte', 'path');
  if (path.startsWith('/')) throw invalidInput(`workspace paths are relative: ${JSON.stringify(path)} is absolute`, 'path');
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw invalidInput(`workspace paths may not contain "..": ${JSON.stringify(path)}`, 'path');
  if (parts.length === 0) throw invalidInput(`${JSON.stringify(path)} names the workspace itself, not a file in it`, 'path');
  return parts.join('/');
}

/** `path` is `root` or below it (both real, absolute paths). */
export const isInside = (root: string, path: string): boolean => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

const escapes = (path: string): TurnstreamError => invalidInput(`${JSON.stringify(path)} leads out of the workspace (a symlink)`, 'path');

/** Owner of what the parent creates, when it runs as root and the sandbox as another user. */
export interface Owner {
  uid: number;
  gid: number;
}

export class Workspace {
  private disposed = false;

  private constructor(
    /** The sandbox's temporary folder (real path). */
    readonly box: string,
    private readonly owner: Owner | undefined,
  ) {}

  /** The workspace folder on the host. */
  get dir(): string {
    return join(this.box, 'workspace');
  }
  /** The folder seen as /tmp inside. */
  get tmp(): string {
    return join(this.box, 'tmp');
  }
  /** An empty folder the unshare sandbox mounts its root on. */
  get root(): string {
    return join(this.box, 'root');
  }

  /** A fresh temporary folder under `tmpRoot`, owned by `owner` where one is given. */
  static async create(tmpRoot: string, owner?: Owner): Promise<Workspace> {
    const box = await realpath(await mkdtemp(join(tmpRoot, boxPrefix())));
    const ws = new Workspace(box, owner);
    for (const d of [ws.dir, ws.tmp, ws.root]) await mkdir(d, { mode: 0o755 });
    await chmod(ws.tmp, 0o1777);
    if (owner) for (const d of [box, ws.dir, ws.tmp, ws.root]) await chown(d, owner.uid, owner.gid);
    return ws;
  }

  /** A file's content as UTF-8. @throws TS_ERR_NOT_FOUND, TS_ERR_TOO_LARGE (over `maxBytes`), TS_ERR_INVALID_INPUT */
  async readFile(path: string, maxBytes = 1024 * 1024): Promise<string> {
    this.live();
    const clean = confinePath(path);
    let real: string;
    try {
      real = await realpath(join(this.dir, clean));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // missing: say so only where the way to it stays inside (a dangling or outward link is refused)
      if (await this.leadsOut(clean)) throw escapes(clean);
      throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no file ${JSON.stringify(clean)} in the workspace`, { param: 'path' });
    }
    if (!isInside(this.dir, real)) throw escapes(clean);
    const handle = await open(real, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    try {
      await this.checkOpened(handle.fd, clean);
      const stat = await handle.stat();
      if (!stat.isFile()) throw invalidInput(`${JSON.stringify(clean)} is not a file`, 'path');
      if (stat.size > maxBytes) {
        throw new TurnstreamError(
          ErrorCodes.TOO_LARGE,
          `${JSON.stringify(clean)} has ${stat.size} bytes, more than the ${maxBytes} read at most`,
          {
            param: 'path',
          },
        );
      }
      return (await handle.readFile()).toString('utf8');
    } finally {
      await handle.close();
    }
  }

  /** Writes a file (replacing it), making the folders on its way. @throws TS_ERR_INVALID_INPUT */
  async writeFile(path: string, content: string | Uint8Array): Promise<void> {
    this.live();
    const clean = confinePath(path);
    const parts = clean.split('/');
    const name = parts.pop() as string;
    let dir = this.dir;
    for (const part of parts) dir = await this.folder(dir, part, clean);
    let target = join(dir, name);
    const existing = await lstat(target).catch(() => undefined);
    if (existing?.isSymbolicLink()) {
      const real = await realpath(target).catch(() => undefined);
      if (!real || !isInside(this.dir, real)) throw escapes(clean);
      target = real;
    }
    const handle = await open(
      target,
      fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK,
      0o644,
    );
    try {
      await this.checkOpened(handle.fd, clean);
      if (!(await handle.stat()).isFile()) throw invalidInput(`${JSON.stringify(clean)} is not a file`, 'path');
      await handle.writeFile(content);
      if (this.owner && !existing) await handle.chown(this.owner.uid, this.owner.gid);
    } finally {
      await handle.close();
    }
  }

  /** Writes each file of a `{ path: content }` map. */
  async writeFiles(files: Readonly<Record<string, string>>): Promise<void> {
    for (const [path, content] of Object.entries(files)) {
      if (typeof content !== 'string') throw invalidInput(`the content of ${JSON.stringify(path)} must be a string`, 'files');
      await this.writeFile(path, content);
    }
  }

  /** A working directory inside, for a relative path (confined, and it must be a folder). */
  async sandboxDir(path: string | undefined, inside: string): Promise<string> {
    if (path === undefined) return inside;
    const clean = confinePath(path);
    const real = await realpath(join(this.dir, clean)).catch(() => undefined);
    if (!real) throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no folder ${JSON.stringify(clean)} in the workspace`, { param: 'cwd' });
    if (!isInside(this.dir, real)) throw escapes(clean);
    if (!(await lstat(real)).isDirectory()) throw invalidInput(`${JSON.stringify(clean)} is not a folder`, 'cwd');
    return `${inside}/${real.slice(this.dir.length + 1)}`;
  }

  /** Removes the whole temporary folder, whatever modes the commands left on it. Safe to call twice. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await removeTree(this.box);
  }

  private live(): void {
    if (this.disposed) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, 'the sandbox has been disposed');
  }

  /** One folder on a write's way: made where missing, followed where a symlink leads inside. */
  private async folder(dir: string, part: string, clean: string): Promise<string> {
    const next = join(dir, part);
    const stat = await lstat(next).catch(() => undefined);
    if (!stat) {
      await mkdir(next, { mode: 0o755 });
      if (this.owner) await chown(next, this.owner.uid, this.owner.gid);
      return next;
    }
    if (stat.isSymbolicLink()) {
      const real = await realpath(next).catch(() => undefined);
      if (!real || !isInside(this.dir, real)) throw escapes(clean);
      if (!(await lstat(real)).isDirectory()) throw invalidInput(`${JSON.stringify(clean)}: ${part} is not a folder`, 'path');
      return real;
    }
    if (!stat.isDirectory()) throw invalidInput(`${JSON.stringify(clean)}: ${part} is not a folder`, 'path');
    return next;
  }

  /** Some symlink on the way to a missing path leads out, or nowhere. */
  private async leadsOut(clean: string): Promise<boolean> {
    let path = this.dir;
    for (const part of clean.split('/')) {
      path = join(path, part);
      const stat = await lstat(path).catch(() => undefined);
      if (!stat) return false;
      if (stat.isSymbolicLink()) {
        const real = await realpath(path).catch(() => undefined);
        if (!real || !isInside(this.dir, real)) return true;
        path = real;
      }
    }
    return false;
  }

  /** The file behind an open descriptor is in the workspace (a symlink swapped in after the check is caught here). */
  private async checkOpened(fd: number, clean: string): Promise<void> {
    const opened = await readlink(`/proc/self/fd/${fd}`);
    if (!isInside(this.dir, opened)) throw escapes(clean);
  }
}
