// The credentials file's lock (proper-lockfile under withCredentialsLock): where it is, that it is let go of, how a wait for it ends, a lock left by a killed otc, and a lock lost while held.
import { mkdir, mkdtemp, rm, stat, utimes } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { until } from "@otc/test-helpers/until";
import { lock } from "proper-lockfile";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CredentialsFileError,
  credentialsLockPath,
  credentialsPath,
  readCredentials,
  updateCredentials,
  withCredentialsLock,
} from "./credentials.js";

let dir: string;
let env: Record<string, string | undefined>;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "otc-lock-"));
  env = { OTC_CONFIG_DIR: dir };
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

/** Takes the lock as another otc holding it would: with proper-lockfile, on the same path. */
const holdLock = () => lock(credentialsPath(env), { realpath: false, stale: 30_000 });

describe("the credentials file's lock", () => {
  it("is credentials.json.lock beside the file while held, and gone afterwards, also on a first login", async () => {
    // No config directory and no file yet, as before the first otc login.
    env = { OTC_CONFIG_DIR: path.join(dir, "config", "otc") };
    expect(credentialsLockPath(env)).toBe(path.join(dir, "config", "otc", "credentials.json.lock"));
    const whileHeld = await withCredentialsLock(env, async (credentials) => {
      const held = await stat(credentialsLockPath(env)).then((info) => info.isDirectory());
      await credentials.update((file) => {
        file.clients["https://as.example"] = { client_id: "otc" };
      });
      return held;
    });
    expect(whileHeld).toBe(true);
    expect(await exists(credentialsLockPath(env))).toBe(false);
    expect((await stat(credentialsPath(env))).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(credentialsPath(env)))).mode & 0o777).toBe(0o700);
    expect((await readCredentials(env)).clients).toEqual({ "https://as.example": { client_id: "otc" } });
  });

  it("is let go of when the work throws", async () => {
    await expect(
      withCredentialsLock(env, async () => {
        throw new Error("the work failed");
      }),
    ).rejects.toThrow("the work failed");
    expect(await exists(credentialsLockPath(env))).toBe(false);
  });

  it("held by another otc past the wait is an error saying so and naming the lock to delete", async () => {
    const release = await holdLock();
    try {
      const started = Date.now();
      // real time: proper-lockfile pauses between its attempts on its own timers (10, 20, 40 and 80 ms here).
      const error = await updateCredentials(env, () => undefined, { timeoutMs: 100 }).catch(
        (caught: unknown) => caught,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      expect(error).toBeInstanceOf(CredentialsFileError);
      expect((error as Error).message).toBe(
        `another otc is updating ${credentialsPath(env)}: it did not let go of ${credentialsLockPath(env)} within 0.1 seconds; try again once it has finished, or delete ${credentialsLockPath(env)} if no otc is running`,
      );
      // The holder's lock is left as it was, and nothing was written.
      expect(await exists(credentialsLockPath(env))).toBe(true);
      expect(await exists(credentialsPath(env))).toBe(false);
    } finally {
      await release();
    }
  });

  it("left by an otc that was killed is taken over once its holder has not touched it for 30 s, and not before", async () => {
    const lockPath = credentialsLockPath(env);
    await mkdir(lockPath);
    // A live holder touches its lock every 5 s: one untouched for 29 s may still be held.
    const touched = (secondsAgo: number) =>
      utimes(lockPath, Date.now() / 1000 - secondsAgo, Date.now() / 1000 - secondsAgo);
    await touched(29);
    await expect(withCredentialsLock(env, async () => "taken", { timeoutMs: 0 })).rejects.toThrow(
      "another otc is updating",
    );
    await touched(31);
    expect(await withCredentialsLock(env, async () => "taken", { timeoutMs: 0 })).toBe("taken");
    expect(await exists(lockPath)).toBe(false);
  });

  it("lost while held (another otc took it over): the work's writes are refused and the whole is an error", async () => {
    const lockPath = credentialsLockPath(env);
    const theirs = new Date("2026-01-01T00:00:00Z");
    let refused: unknown;
    const outcome = await withCredentialsLock(
      env,
      async (credentials) => {
        // Another otc takes the lock over, as it would one it found stale.
        await rm(lockPath, { recursive: true });
        await mkdir(lockPath);
        await utimes(lockPath, theirs, theirs);
        // real time: the holder finds its lock lost at its next touch, on proper-lockfile's timer (every 1 s here).
        await until(
          async () => {
            try {
              await credentials.update((file) => {
                file.clients["https://as.example"] = { client_id: "otc" };
              });
              return false;
            } catch (error) {
              refused = error;
              return true;
            }
          },
          { what: "a write to be refused" },
        );
        return "finished";
      },
      { staleMs: 2_000 },
    ).catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(CredentialsFileError);
    expect((refused as Error).message).toMatch(
      new RegExp(`^this otc lost the lock of ${credentialsPath(env).replaceAll(/[.\\]/g, "\\$&")} while updating it`),
    );
    expect((refused as Error).message).toContain("so nothing more was written; run the command again");
    // The work ended, but it did not hold the lock throughout: its result is not taken.
    expect(outcome).toBeInstanceOf(CredentialsFileError);
    expect((outcome as Error).message).toBe((refused as Error).message);
    // The other otc's lock is not removed by the one that lost it.
    expect((await stat(lockPath)).mtime).toEqual(theirs);
  });
});
