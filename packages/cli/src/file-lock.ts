/** A lock file that lets one process at a time read, change and write back a file another otc process may be changing too. */
import { randomBytes } from "node:crypto";
import { type FileHandle, open, readFile, stat, unlink } from "node:fs/promises";
import os from "node:os";

/** How long a waiter waits for the holder by default, in milliseconds. */
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;
/** How old a lock must be to be taken as abandoned by default, in milliseconds: longer than any wait for it. */
export const DEFAULT_STALE_LOCK_MS = 30_000;
/** The first pause between two attempts; each next one doubles, up to {@link LAST_PAUSE_MS}. */
const FIRST_PAUSE_MS = 10;
const LAST_PAUSE_MS = 250;

/** What {@link withFileLock} and {@link acquireFileLock} take. */
export interface FileLockOptions {
  /** How long to wait (the pauses between attempts added up) for a holder to let go; default 10 s. */
  timeoutMs?: number;
  /** A lock older than this, by its own start time, is taken over even if its holder still runs; default 30 s. */
  staleMs?: number;
  /** The time a lock's start is written in and its age judged by; default the wall clock. */
  now?: () => number;
  /** The pause between two attempts; default a real timer. A test passes one that only counts. */
  sleep?: (ms: number) => Promise<void>;
}

/** Who holds a lock, as its file says. */
export interface LockHolder {
  pid: number;
  /** The host the holder runs on: its pid says something only there. */
  host: string;
  /** When it took the lock (ISO 8601). */
  started_at: string;
  /** A random value of this holding, so that a holder removes only its own lock. */
  token: string;
}

/** The lock was held by another process for longer than the wait allowed. */
export class FileLockTimeoutError extends Error {
  override name = "FileLockTimeoutError";
  /** The lock file. */
  readonly lockPath: string;
  /** Its holder, where its file could be read. */
  readonly holder: LockHolder | undefined;

  constructor(lockPath: string, holder: LockHolder | undefined, timeoutMs: number) {
    const who = holder
      ? `process ${holder.pid}${holder.host === os.hostname() ? "" : ` on ${holder.host}`} (since ${holder.started_at})`
      : "a process that has not written its pid yet";
    super(
      `${lockPath} is held by ${who}, which did not let go of it within ${timeoutMs / 1000} seconds: try again once it has finished, or delete ${lockPath} if it is no longer running`,
    );
    this.lockPath = lockPath;
    this.holder = holder;
  }
}

/** What a waiter saw in the lock file: its holder (when its content could be read yet) and its identity. */
interface Seen {
  holder: LockHolder | undefined;
  ino: number;
  mtimeMs: number;
  size: number;
}

/** The tokens of the locks this process holds: a lock file naming this pid with another token is a dead one's. */
const heldHere = new Set<string>();

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;

function isHolder(value: unknown): value is LockHolder {
  const holder = value as Partial<LockHolder> | null;
  return (
    typeof holder === "object" &&
    holder !== null &&
    Number.isSafeInteger(holder.pid) &&
    typeof holder.host === "string" &&
    typeof holder.started_at === "string" &&
    typeof holder.token === "string"
  );
}

/** The lock file as it is now, or undefined when there is none. */
async function look(lockPath: string): Promise<Seen | undefined> {
  try {
    const [info, text] = await Promise.all([stat(lockPath), readFile(lockPath, "utf8")]);
    let holder: LockHolder | undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      holder = isHolder(parsed) ? parsed : undefined;
    } catch {
      // Empty or half written: its creator is between creating it and writing to it (or died there).
      holder = undefined;
    }
    return { holder, ino: info.ino, mtimeMs: info.mtimeMs, size: info.size };
  } catch (error) {
    if (errorCode(error) === "ENOENT") {
      return undefined;
    }
    throw error;
  }
}

/** Whether the process `pid` of this host runs: signal 0 checks without sending anything. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return errorCode(error) !== "ESRCH";
  }
}

/** Why the lock seen is abandoned, or undefined while its holder may still be at work. */
function abandoned(seen: Seen, now: number, staleMs: number): string | undefined {
  const { holder } = seen;
  if (holder === undefined) {
    // No holder written yet: a creator writes right after creating, so only an old file is a dead one's.
    return now - seen.mtimeMs > staleMs ? "unwritten and old" : undefined;
  }
  if (now - Date.parse(holder.started_at) > staleMs) {
    return "old";
  }
  if (holder.host === os.hostname()) {
    if (holder.pid === process.pid) {
      return heldHere.has(holder.token) ? undefined : "left by an earlier process with this pid";
    }
    if (!running(holder.pid)) {
      return "its process is gone";
    }
  }
  return undefined;
}

/** The same lock file as seen before: a lock taken over and taken again in between is another one. */
const same = (a: Seen, b: Seen) =>
  a.holder !== undefined && b.holder !== undefined
    ? a.holder.token === b.holder.token
    : a.ino === b.ino && a.mtimeMs === b.mtimeMs && a.size === b.size;

/**
 * Removes the abandoned lock `seen`, if no one else is doing so: under a second lock file (`<lock>.takeover`), so that
 * two waiters that both found it abandoned do not both remove it, the second removing the one the first then took.
 * Under it the lock is looked at again and removed only if it is still the one seen. Resolves with whether it got the
 * takeover lock (when not, another waiter is at it and this one pauses).
 */
async function takeOver(lockPath: string, seen: Seen, now: () => number, staleMs: number): Promise<boolean> {
  const guard = `${lockPath}.takeover`;
  let handle: FileHandle;
  try {
    handle = await open(guard, "wx", 0o600);
  } catch (error) {
    if (errorCode(error) !== "EEXIST") {
      throw error;
    }
    // A waiter that died between taking the guard and letting go of it (a few file operations) left it behind.
    const info = await stat(guard).catch(() => undefined);
    if (info && now() - info.mtimeMs > staleMs) {
      await unlink(guard).catch(() => undefined);
    }
    return false;
  }
  try {
    await handle.close();
    const again = await look(lockPath);
    if (again && same(again, seen)) {
      await unlink(lockPath).catch((error: unknown) => {
        if (errorCode(error) !== "ENOENT") {
          throw error;
        }
      });
    }
    return true;
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

/** Creates the lock file if there is none (O_CREAT|O_EXCL: one creator wins), with `holder` in it, mode 0600. */
async function create(lockPath: string, holder: LockHolder): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(lockPath, "wx", 0o600);
  } catch (error) {
    if (errorCode(error) === "EEXIST") {
      return false;
    }
    throw error;
  }
  let written = false;
  try {
    await handle.writeFile(`${JSON.stringify(holder)}\n`);
    written = true;
  } finally {
    await handle.close().catch(() => undefined);
    if (!written) {
      await unlink(lockPath).catch(() => undefined);
    }
  }
  return true;
}

/** Removes the lock file if it is still the one `token` made (it is not when it was taken over as stale). */
async function release(lockPath: string, token: string): Promise<void> {
  try {
    const seen = await look(lockPath).catch(() => undefined);
    if (seen?.holder?.token === token) {
      await unlink(lockPath).catch(() => undefined);
    }
  } finally {
    // Only once the file is gone: a waiter here that saw it with the token forgotten would take it for a dead
    // process's lock, take it over, and then lose it to the unlink above.
    heldHere.delete(token);
  }
}

// real time: the pause waits for another process to let go of the lock; nothing in this one moves it on.
const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Takes the lock file `lockPath` (its directory must exist): creates it with this process's pid, host, start time
 * and a random token, or, while another process holds it, tries again after short pauses (10 ms doubling to
 * 250 ms) until `timeoutMs` of them have passed, then throws a {@link FileLockTimeoutError}. A lock whose process is
 * gone (same host, `kill(pid, 0)` fails with ESRCH) or that is older than `staleMs` is abandoned: it is removed and
 * taken. Resolves with the function that lets go of it.
 */
export async function acquireFileLock(lockPath: string, options: FileLockOptions = {}): Promise<() => Promise<void>> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const staleMs = options.staleMs ?? DEFAULT_STALE_LOCK_MS;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? realSleep;
  const token = randomBytes(16).toString("hex");
  let waited = 0;
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LAST_PAUSE_MS)) {
    const holder: LockHolder = {
      pid: process.pid,
      host: os.hostname(),
      started_at: new Date(now()).toISOString(),
      token,
    };
    // Marked before the file exists, so that no look at it finds this pid's lock unknown here.
    heldHere.add(token);
    let created = false;
    try {
      created = await create(lockPath, holder);
    } finally {
      if (!created) {
        heldHere.delete(token);
      }
    }
    if (created) {
      return () => release(lockPath, token);
    }
    const seen = await look(lockPath);
    if (seen === undefined) {
      // Let go of between the two looks: try again at once.
      continue;
    }
    if (abandoned(seen, now(), staleMs) !== undefined && (await takeOver(lockPath, seen, now, staleMs))) {
      continue;
    }
    if (waited >= timeoutMs) {
      throw new FileLockTimeoutError(lockPath, seen.holder, timeoutMs);
    }
    const ms = Math.min(pause, timeoutMs - waited);
    await sleep(ms);
    waited += ms;
  }
}

/**
 * Runs `work` holding the lock file `lockPath` (see {@link acquireFileLock}), and lets go of it however `work` ends.
 *
 * @example
 * await withFileLock(`${file}.lock`, async () => {
 *   const content = await readFile(file, "utf8");
 *   await writeAtomically(file, change(content));
 * });
 */
export async function withFileLock<T>(
  lockPath: string,
  work: () => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const letGo = await acquireFileLock(lockPath, options);
  try {
    return await work();
  } finally {
    await letGo();
  }
}
