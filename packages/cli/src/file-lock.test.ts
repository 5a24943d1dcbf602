// The lock file of file-lock.ts and of the credentials file: taken and let go of, waited for with a bound, and taken over from a holder that is gone or too old.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CredentialsFileError, credentialsLockPath, updateCredentials, withCredentialsLock } from "./credentials.js";
import { acquireFileLock, FileLockTimeoutError, type LockHolder, withFileLock } from "./file-lock.js";

let dir: string;
let lockPath: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "otc-lock-"));
  lockPath = path.join(dir, "file.lock");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A pause that only counts: the waits are measured without waiting. */
function countingSleep() {
  const pauses: number[] = [];
  return {
    pauses,
    sleep: async (ms: number) => {
      pauses.push(ms);
    },
  };
}

/** A pause that fails the test: where a lock must be taken without waiting for anyone. */
const noWait = async (ms: number) => {
  throw new Error(`waited ${ms} ms for a lock that should have been taken at once`);
};

/** The pid of a process that ran and ended: a holder that is gone. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ["-e", ""], (error) => {
      if (error) {
        reject(error);
      } else {
        resolve(child.pid as number);
      }
    });
  });
}

const readHolder = async (file = lockPath): Promise<LockHolder> => JSON.parse(await readFile(file, "utf8"));
const writeHolder = (holder: Partial<LockHolder>, file = lockPath) =>
  writeFile(
    file,
    JSON.stringify({
      pid: process.ppid,
      host: os.hostname(),
      started_at: new Date().toISOString(),
      token: "another-holder",
      ...holder,
    }),
  );
const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

describe("withFileLock", () => {
  it("creates the lock with its pid, host and start time, mode 0600, and removes it afterwards", async () => {
    const seen = await withFileLock(
      lockPath,
      async () => ({ holder: await readHolder(), mode: (await stat(lockPath)).mode & 0o777 }),
      { sleep: noWait },
    );
    expect(seen.holder).toEqual({
      pid: process.pid,
      host: os.hostname(),
      started_at: expect.any(String),
      token: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(Math.abs(Date.parse(seen.holder.started_at) - Date.now())).toBeLessThan(60_000);
    expect(seen.mode).toBe(0o600);
    expect(await exists(lockPath)).toBe(false);
  });

  it("lets go of the lock when the work throws", async () => {
    await expect(
      withFileLock(
        lockPath,
        async () => {
          throw new Error("the work failed");
        },
        { sleep: noWait },
      ),
    ).rejects.toThrow("the work failed");
    expect(await exists(lockPath)).toBe(false);
  });

  it("takes over a lock whose process is gone, without waiting", async () => {
    const pid = await deadPid();
    await writeHolder({ pid, token: "dead-holder" });
    const holder = await withFileLock(lockPath, () => readHolder(), { sleep: noWait });
    expect(holder.pid).toBe(process.pid);
    expect(holder.token).not.toBe("dead-holder");
    expect(await exists(lockPath)).toBe(false);
    expect(await exists(`${lockPath}.takeover`)).toBe(false);
  });

  it("takes over a lock left with this process's pid by an earlier process (the pid reused)", async () => {
    await writeHolder({ pid: process.pid, token: "earlier-process" });
    const holder = await withFileLock(lockPath, () => readHolder(), { sleep: noWait });
    expect(holder.token).not.toBe("earlier-process");
  });

  it("takes over a lock older than the stale bound even though its process runs, by the clock it is given", async () => {
    const now = Date.parse("2026-06-01T12:00:00Z");
    await writeHolder({ pid: process.ppid, started_at: new Date(now - 30_001).toISOString() });
    const holder = await withFileLock(lockPath, () => readHolder(), { sleep: noWait, now: () => now });
    expect(holder).toMatchObject({ pid: process.pid, started_at: new Date(now).toISOString() });
  });

  it("takes over a lock its creator never wrote to, once it is older than the stale bound", async () => {
    await writeFile(lockPath, "");
    const { mtimeMs } = await stat(lockPath);
    const waiting = countingSleep();
    // As young as the stale bound: its creator may be about to write to it.
    await expect(
      withFileLock(lockPath, async () => "taken", {
        sleep: waiting.sleep,
        timeoutMs: 100,
        now: () => mtimeMs + 30_000,
      }),
    ).rejects.toThrow(FileLockTimeoutError);
    expect(await withFileLock(lockPath, async () => "taken", { sleep: noWait, now: () => mtimeMs + 30_001 })).toBe(
      "taken",
    );
  });

  it("waits with short pauses for a live holder, then says who holds the lock and how to clear it", async () => {
    // The vitest process that started this one: alive for the whole test.
    const startedAt = new Date().toISOString();
    await writeHolder({ pid: process.ppid, started_at: startedAt });
    const waiting = countingSleep();
    const error = await withFileLock(lockPath, async () => "never", { sleep: waiting.sleep }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(FileLockTimeoutError);
    expect((error as Error).message).toBe(
      `${lockPath} is held by process ${process.ppid} (since ${startedAt}), which did not let go of it within 10 seconds: try again once it has finished, or delete ${lockPath} if it is no longer running`,
    );
    // 10 ms doubling to 250 ms, adding up to the 10 s bound.
    expect(waiting.pauses.slice(0, 6)).toEqual([10, 20, 40, 80, 160, 250]);
    expect(waiting.pauses.reduce((sum, ms) => sum + ms, 0)).toBe(10_000);
    // The holder's lock is left as it was.
    expect((await readHolder()).token).toBe("another-holder");
  });

  it("waits for a holder in this process, and takes the lock once it is let go of", async () => {
    const letGo = await acquireFileLock(lockPath, { sleep: noWait });
    const waiting = countingSleep();
    await expect(withFileLock(lockPath, async () => "never", { sleep: waiting.sleep })).rejects.toThrow(
      `is held by process ${process.pid}`,
    );
    // The holder lets go during the waiter's third pause: the waiter takes the lock at its next attempt.
    const released = countingSleep();
    const second = withFileLock(lockPath, async () => "taken", {
      sleep: async (ms) => {
        await released.sleep(ms);
        if (released.pauses.length === 3) {
          await letGo();
        }
      },
    });
    expect(await second).toBe("taken");
    expect(released.pauses).toEqual([10, 20, 40]);
  });

  it("lets one of many waiters at a time into an abandoned lock", async () => {
    await writeHolder({ pid: await deadPid() });
    let inside = 0;
    let most = 0;
    const work = async () => {
      inside++;
      most = Math.max(most, inside);
      await readHolder();
      await stat(lockPath);
      inside--;
    };
    // The waiters only give way to one another (no time passes): their pauses are turns of the event loop.
    const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.all(
      Array.from({ length: 6 }, () => withFileLock(lockPath, work, { sleep: yieldTurn, timeoutMs: 1e9 })),
    );
    expect(most).toBe(1);
    expect(await exists(lockPath)).toBe(false);
  });

  it("lets one holder at a time in among many waiters taking turns in this process", async () => {
    let inside = 0;
    let most = 0;
    let turns = 0;
    const work = async () => {
      inside++;
      most = Math.max(most, inside);
      await readHolder();
      inside--;
      turns++;
    };
    // No time passes: the waiters' pauses are turns of the event loop, so they look at the lock while it is let go of.
    const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        for (let round = 0; round < 10; round++) {
          await withFileLock(lockPath, work, { sleep: yieldTurn, timeoutMs: 1e9 });
        }
      }),
    );
    expect(turns).toBe(60);
    expect(most).toBe(1);
  });

  it("does not remove a lock another process took over from it", async () => {
    const letGo = await acquireFileLock(lockPath, { sleep: noWait });
    // Taken over as stale while this holder was still at work.
    await writeHolder({ token: "the-taker" });
    await letGo();
    expect((await readHolder()).token).toBe("the-taker");
  });
});

describe("the credentials file's lock", () => {
  it("is credentials.json.lock beside the file, and gone after an update", async () => {
    const env = { OTC_CONFIG_DIR: dir };
    expect(credentialsLockPath(env)).toBe(path.join(dir, "credentials.json.lock"));
    await updateCredentials(env, (file) => {
      file.clients["https://as.example"] = { client_id: "otc" };
    });
    expect(await exists(credentialsLockPath(env))).toBe(false);
    expect((await stat(path.join(dir, "credentials.json"))).mode & 0o777).toBe(0o600);
  });

  it("held too long by another otc is an error saying so and naming the lock to delete", async () => {
    const env = { OTC_CONFIG_DIR: dir };
    await writeHolder({ pid: process.ppid }, credentialsLockPath(env));
    const waiting = countingSleep();
    const error = await withCredentialsLock(env, async () => "never", { sleep: waiting.sleep }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(CredentialsFileError);
    const message = (error as Error).message;
    expect(message).toContain(`another otc is updating ${path.join(dir, "credentials.json")}: `);
    expect(message).toContain(`held by process ${process.ppid}`);
    expect(message).toContain("did not let go of it within 10 seconds");
    expect(message).toContain(`delete ${credentialsLockPath(env)} if it is no longer running`);
  });
});
