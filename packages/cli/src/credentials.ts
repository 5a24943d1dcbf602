/** The sign-ins `otc login` keeps: one JSON file, private to the user (0600 in a 0700 directory), written whole and atomically, under a lock. */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { lock } from "proper-lockfile";

/** One server's sign-in, keyed in the file by its resource URL (the server's canonical URL, RFC 9728 `resource`). */
export interface StoredSignIn {
  /** The server's canonical URL, as its resource metadata names it: the `resource` the tokens were asked for. */
  resource: string;
  /** The authorization server that issued the tokens (its issuer identifier). */
  issuer: string;
  /** The OAuth client the tokens were issued to. */
  client_id: string;
  access_token: string;
  refresh_token?: string;
  /** When the access token expires (ISO 8601); absent when the authorization server did not say. */
  expires_at?: string;
  /** The scopes granted, space-separated. */
  scope?: string;
}

/** A client `otc login` registered at an authorization server (RFC 7591), reused by the next login there. */
export interface RegisteredClient {
  client_id: string;
}

/** The whole file. */
export interface CredentialsFile {
  version: 1;
  /** Sign-ins by resource URL. */
  servers: Record<string, StoredSignIn>;
  /** Dynamically registered clients by issuer. */
  clients: Record<string, RegisteredClient>;
}

/** The credentials file is unreadable or not one otc wrote. */
export class CredentialsFileError extends Error {
  override name = "CredentialsFileError";
}

/**
 * Where the file lives: `$OTC_CONFIG_DIR/credentials.json`, else `$XDG_CONFIG_HOME/otc/credentials.json`, else
 * `~/.config/otc/credentials.json`.
 */
export function credentialsPath(env: Record<string, string | undefined>): string {
  const dir = env.OTC_CONFIG_DIR || path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config"), "otc");
  return path.join(dir, "credentials.json");
}

/** The key of a server in the file: its URL's normal form without a trailing slash, so `/oxp` and `/oxp/` are one. */
export function resourceKey(url: string): string {
  const href = new URL(url).href;
  return href.endsWith("/") ? href.slice(0, -1) : href;
}

const empty = (): CredentialsFile => ({ version: 1, servers: {}, clients: {} });

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The file's content; an empty one when there is no file yet. */
export async function readCredentials(env: Record<string, string | undefined>): Promise<CredentialsFile> {
  const file = credentialsPath(env);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      return empty();
    }
    throw new CredentialsFileError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CredentialsFileError(`${file} is not valid JSON: delete it and run otc login again`);
  }
  if (!isRecord(parsed) || parsed.version !== 1 || !isRecord(parsed.servers)) {
    throw new CredentialsFileError(`${file} is not an otc credentials file: delete it and run otc login again`);
  }
  return {
    version: 1,
    servers: parsed.servers as CredentialsFile["servers"],
    clients: isRecord(parsed.clients) ? (parsed.clients as CredentialsFile["clients"]) : {},
  };
}

/** The sign-in kept for the server at `url`, if any. */
export async function findSignIn(
  env: Record<string, string | undefined>,
  url: string,
): Promise<StoredSignIn | undefined> {
  const { servers } = await readCredentials(env);
  return Object.hasOwn(servers, resourceKey(url)) ? servers[resourceKey(url)] : undefined;
}

/**
 * Where the lock of the credentials file is: beside it, `credentials.json.lock`, a directory (proper-lockfile's
 * `mkdir` lock, which is atomic on every file system, network ones too).
 */
export function credentialsLockPath(env: Record<string, string | undefined>): string {
  return `${credentialsPath(env)}.lock`;
}

/** How long a waiter waits for another otc to let go of the lock by default, in milliseconds. */
export const CREDENTIALS_LOCK_TIMEOUT_MS = 10_000;
/**
 * How long a lock must go without its holder touching it to be taken as left by an otc that was killed (a live
 * holder touches it every 5 s), in milliseconds: longer than any wait for it.
 */
export const CREDENTIALS_LOCK_STALE_MS = 30_000;
/** How often the holder touches its lock (proper-lockfile updates its mtime), so that it never looks abandoned. */
const LOCK_UPDATE_MS = 5_000;
/** The first pause between two attempts at the lock; each next one doubles, up to {@link LAST_PAUSE_MS}. */
const FIRST_PAUSE_MS = 10;
const LAST_PAUSE_MS = 250;

/**
 * What {@link withCredentialsLock} takes. Our own type rather than proper-lockfile's, so that no public declaration
 * of @otc/cli needs @types/proper-lockfile.
 */
export interface CredentialsLockOptions {
  /** How long to wait (the pauses between attempts added up) for another otc to let go of the lock; default 10 s. */
  timeoutMs?: number;
  /**
   * A lock its holder has not touched for this long is taken over; default 30 s, 2 s at the least (the holder
   * touches it every 5 s, or every half of this when shorter).
   */
  staleMs?: number;
}

/** The number of pauses (10 ms doubling to 250 ms, as proper-lockfile's `retries` makes them) that add up to `ms`. */
function retriesFor(ms: number): number {
  let retries = 0;
  for (let waited = 0, pause = FIRST_PAUSE_MS; waited < ms; pause = Math.min(pause * 2, LAST_PAUSE_MS)) {
    waited += pause;
    retries++;
  }
  return retries;
}

/** The credentials file as the holder of its lock reads and changes it (see {@link withCredentialsLock}). */
export interface LockedCredentials {
  /** The file's content now. */
  read(): Promise<CredentialsFile>;
  /** Reads the file, lets `change` edit it, and writes it back (atomically, 0600). */
  update(change: (file: CredentialsFile) => void): Promise<void>;
}

/**
 * Writes `content` as the file: to a temporary file beside it (0600), then renamed over it, so that a reader never
 * sees half a file and a crash leaves the old one.
 */
async function writeCredentials(file: string, content: CredentialsFile): Promise<void> {
  const temporary = path.join(path.dirname(file), `.credentials.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(temporary, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    // The mode given to writeFile is masked by the umask; 0600 is what the file must have whatever it is.
    await chmod(temporary, 0o600);
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * Runs `work` holding the lock of the credentials file (`credentials.json.lock` beside it, taken with
 * proper-lockfile), so that no other otc process changes the file between what `work` reads and what it writes back:
 * two processes renewing one sign-in at once would both spend its refresh token, and an authorization server that
 * rotates refresh tokens takes the second use for a stolen token and revokes the sign-in. The directory is made 0700;
 * the file need not exist yet (a first login). A lock held past the wait (10 s by default) is a CredentialsFileError
 * saying so; one not touched by its holder for 30 s (an otc that was killed) is taken over. Should this otc lose the
 * lock while `work` runs (another took it over, or it could not be touched), `work`'s writes are refused and the
 * whole is a CredentialsFileError.
 */
export async function withCredentialsLock<T>(
  env: Record<string, string | undefined>,
  work: (credentials: LockedCredentials) => Promise<T>,
  options: CredentialsLockOptions = {},
): Promise<T> {
  const file = credentialsPath(env);
  const lockPath = credentialsLockPath(env);
  const timeoutMs = options.timeoutMs ?? CREDENTIALS_LOCK_TIMEOUT_MS;
  const staleMs = options.staleMs ?? CREDENTIALS_LOCK_STALE_MS;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  let lost: Error | undefined;
  const lostError = (cause: Error) =>
    new CredentialsFileError(
      `this otc lost the lock of ${file} while updating it (${cause.message}): another otc may have changed the file meanwhile, so nothing more was written; run the command again`,
      { cause },
    );
  let release: () => Promise<void>;
  try {
    release = await lock(file, {
      // The file is not there before the first login: lock its path as it is, not the path it resolves to.
      realpath: false,
      stale: staleMs,
      update: Math.min(LOCK_UPDATE_MS, staleMs / 2),
      retries: { retries: retriesFor(timeoutMs), factor: 2, minTimeout: FIRST_PAUSE_MS, maxTimeout: LAST_PAUSE_MS },
      // Called from the library's timer: by default it throws there, which would end the process. Here it only
      // marks the lock lost; the work sees it at its next write, and at its end.
      onCompromised: (error) => {
        lost = error;
      },
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOCKED") {
      throw new CredentialsFileError(
        `another otc is updating ${file}: it did not let go of ${lockPath} within ${timeoutMs / 1000} seconds; try again once it has finished, or delete ${lockPath} if no otc is running`,
        { cause: error },
      );
    }
    throw new CredentialsFileError(`cannot lock ${file}: ${(error as Error).message}`, { cause: error });
  }
  let result: T;
  try {
    result = await work({
      read: () => readCredentials(env),
      update: async (change) => {
        if (lost) {
          throw lostError(lost);
        }
        const content = await readCredentials(env);
        change(content);
        await writeCredentials(file, content);
      },
    });
  } finally {
    // A lock that cannot be removed is taken over once stale; failing here would undo work that succeeded. A lost
    // lock is not removed (it is another otc's now): release then rejects, and `lost` says why below.
    await release().catch(() => undefined);
  }
  if (lost) {
    throw lostError(lost);
  }
  return result;
}

/**
 * Reads the file, lets `change` edit it, and writes it back (atomically, 0600), holding the file's lock meanwhile
 * (see {@link withCredentialsLock}) so that another otc's change made in between is not lost.
 */
export function updateCredentials(
  env: Record<string, string | undefined>,
  change: (file: CredentialsFile) => void,
  options: CredentialsLockOptions = {},
): Promise<void> {
  return withCredentialsLock(env, (credentials) => credentials.update(change), options);
}

/** Stores `signIn` under its resource, replacing the one kept there. */
export function saveSignIn(env: Record<string, string | undefined>, signIn: StoredSignIn): Promise<void> {
  return updateCredentials(env, (file) => {
    file.servers[resourceKey(signIn.resource)] = signIn;
  });
}

/** Forgets the sign-in kept for the server at `url`. */
export function removeSignIn(env: Record<string, string | undefined>, url: string): Promise<void> {
  return updateCredentials(env, (file) => {
    delete file.servers[resourceKey(url)];
  });
}
