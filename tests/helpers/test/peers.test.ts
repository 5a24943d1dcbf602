// The peers' decision (use, install with apt-get, or fail naming the command) on machines described to it, and the lock that keeps two installs apart; nothing here runs apt-get.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  hostMachine,
  INSTALL_COMMAND,
  type Machine,
  type Peer,
  planPeer,
  requirePeer,
  withLock,
} from "../src/peers.js";

const REDIS: Peer = { name: "redis-server", binary: "redis-server", package: "redis-server" };
const CHROMIUM: Peer = { name: "chromium", binary: "/usr/bin/chromium", package: "chromium" };

/** A machine with these commands, this uid, and sudo without a password or not; counts the sudo probes. */
function machine(options: { has: string[]; uid?: number; sudo?: boolean }) {
  const installed = new Set(options.has);
  const described = {
    sudoProbes: 0,
    installed,
    has: (command: string) => installed.has(command),
    uid: options.uid,
    passwordlessSudo: () => {
      described.sudoProbes++;
      return options.sudo ?? false;
    },
  } satisfies Machine & Record<string, unknown>;
  return described;
}

const APT = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=300"];

describe("planPeer", () => {
  it("uses a peer that is there, asking nothing else", () => {
    const here = machine({ has: ["redis-server"], uid: 1000 });
    expect(planPeer(REDIS, here)).toEqual({ action: "use" });
    expect(here.sudoProbes).toBe(0);
  });

  it("installs a missing peer as root with apt-get update, then apt-get install of its package alone", () => {
    const root = machine({ has: ["apt-get"], uid: 0 });
    expect(planPeer(CHROMIUM, root)).toEqual({
      action: "install",
      commands: [
        [...APT, "update"],
        [...APT, "install", "-y", "--no-install-recommends", "chromium"],
      ],
    });
    // Root needs no sudo, so it is not asked about.
    expect(root.sudoProbes).toBe(0);
  });

  it("installs through sudo -n for a user with passwordless sudo", () => {
    const user = machine({ has: ["apt-get"], uid: 1000, sudo: true });
    expect(planPeer(REDIS, user)).toEqual({
      action: "install",
      commands: [
        ["sudo", "-n", ...APT, "update"],
        ["sudo", "-n", ...APT, "install", "-y", "--no-install-recommends", "redis-server"],
      ],
    });
  });

  it("fails at once, naming the one command, for a user whose sudo asks for a password", () => {
    const plan = planPeer(REDIS, machine({ has: ["apt-get"], uid: 1000, sudo: false }));
    expect(plan.action).toBe("fail");
    expect(plan).toMatchObject({ message: expect.stringContaining(`Run: ${INSTALL_COMMAND}`) });
    expect(plan).toMatchObject({ message: expect.stringContaining("redis-server is missing") });
  });

  it("fails, naming the command, on a machine without apt-get, even as root", () => {
    const plan = planPeer(CHROMIUM, machine({ has: [], uid: 0 }));
    expect(plan).toMatchObject({ action: "fail", message: expect.stringContaining("no apt-get") });
    expect(plan).toMatchObject({ message: expect.stringContaining(INSTALL_COMMAND) });
  });

  it("fails on Windows-like machines with no uid and no sudo", () => {
    expect(planPeer(REDIS, machine({ has: ["apt-get"] }))).toMatchObject({ action: "fail" });
  });

  it("never installs over a binary an environment variable chose: it names the variable", () => {
    const chosen: Peer = { ...REDIS, binary: "/opt/redis/bin/redis-server", chosenBy: "REDIS_SERVER" };
    const plan = planPeer(chosen, machine({ has: ["apt-get"], uid: 0 }));
    expect(plan).toMatchObject({ action: "fail", message: expect.stringContaining("REDIS_SERVER") });
  });
});

describe("hostMachine", () => {
  it("finds a command by path and by name on PATH, and not a directory or a missing one", () => {
    expect(hostMachine.has(process.execPath)).toBe(true);
    expect(hostMachine.has("node")).toBe(true);
    expect(hostMachine.has(tmpdir())).toBe(false);
    expect(hostMachine.has("otc-no-such-command")).toBe(false);
    expect(hostMachine.has("/usr/bin/otc-no-such-command")).toBe(false);
  });
});

describe("requirePeer", () => {
  let directory: string;
  let lockPath: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), "otc-peers-test-"));
    lockPath = join(directory, "install.lock");
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it("runs the plan's commands in order, prints one line saying so, and releases the lock", async () => {
    const root = machine({ has: ["apt-get"], uid: 0 });
    const ran: string[][] = [];
    const lines: string[] = [];
    await requirePeer(REDIS, {
      machine: root,
      lockPath,
      log: (line) => lines.push(line),
      run: async (command) => {
        ran.push(command);
        if (command.includes("install")) {
          root.installed.add("redis-server");
        }
      },
    });
    expect(ran.map((command) => command.slice(APT.length))).toEqual([
      ["update"],
      ["install", "-y", "--no-install-recommends", "redis-server"],
    ]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^redis-server is missing: installing Debian's redis-server \(.*apt-get .*install/);
    expect(existsSync(lockPath)).toBe(false);
  });

  it("does nothing, and prints nothing, when the peer is there", async () => {
    const lines: string[] = [];
    await requirePeer(REDIS, {
      machine: machine({ has: ["redis-server"], uid: 0 }),
      lockPath,
      log: (line) => lines.push(line),
      run: () => Promise.reject(new Error("must not run")),
    });
    expect(lines).toEqual([]);
  });

  it("rejects with the plan's message, running nothing, where it may not install", async () => {
    const ran: string[][] = [];
    const attempt = requirePeer(CHROMIUM, {
      machine: machine({ has: ["apt-get"], uid: 1000, sudo: false }),
      lockPath,
      run: async (command) => {
        ran.push(command);
      },
    });
    await expect(attempt).rejects.toThrow(INSTALL_COMMAND);
    expect(ran).toEqual([]);
  });

  it("rejects when apt-get succeeded but the binary is still missing", async () => {
    const attempt = requirePeer(CHROMIUM, {
      machine: machine({ has: ["apt-get"], uid: 0 }),
      lockPath,
      log: () => {},
      run: async () => {},
    });
    await expect(attempt).rejects.toThrow(/still missing/);
    expect(existsSync(lockPath)).toBe(false);
  });

  it("installs once when several test files need the same missing peer at the same time", async () => {
    const root = machine({ has: ["apt-get"], uid: 0 });
    let installs = 0;
    let running = 0;
    let overlapped = false;
    const run = async (command: string[]) => {
      running++;
      overlapped ||= running > 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (command.includes("install")) {
        installs++;
        root.installed.add("redis-server");
      }
      running--;
    };
    await Promise.all(
      Array.from({ length: 4 }, () => requirePeer(REDIS, { machine: root, lockPath, run, log: () => {} })),
    );
    expect(installs).toBe(1);
    expect(overlapped).toBe(false);
  });
});

describe("withLock", () => {
  let directory: string;
  let lockPath: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), "otc-peers-test-"));
    lockPath = join(directory, "install.lock");
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it("takes over a lock whose process is gone", async () => {
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    writeFileSync(lockPath, String(gone));
    await expect(withLock(lockPath, 2_000, async () => "ran")).resolves.toBe("ran");
    expect(existsSync(lockPath)).toBe(false);
  });

  it("waits for a live holder, and gives up after its time limit naming the lock", async () => {
    // This test's own process holds it, as another test process would.
    writeFileSync(lockPath, String(process.pid));
    await expect(withLock(lockPath, 300, async () => "ran")).rejects.toThrow(lockPath);
    expect(existsSync(lockPath)).toBe(true);
  });

  it("releases the lock when the body fails", async () => {
    await expect(withLock(lockPath, 1_000, () => Promise.reject(new Error("apt-get failed")))).rejects.toThrow(
      "apt-get failed",
    );
    expect(existsSync(lockPath)).toBe(false);
  });
});
