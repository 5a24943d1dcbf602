// Real peers the tests start (redis-server, Chromium): found, installed with apt-get where the machine allows it, or a failure that names the one command to run.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, closeSync, constants, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** The one command that gives a Debian or Ubuntu machine every peer the tests need. */
export const INSTALL_COMMAND = "sudo apt-get install redis-server chromium";

/** A program the tests run. */
export interface Peer {
  /** Its name in messages, e.g. `redis-server`. */
  name: string;
  /** The command (looked up on PATH) or the absolute path the tests run. */
  binary: string;
  /** The Debian package that provides `binary`. */
  package: string;
  /** The environment variable that chose `binary`, when one did: apt-get cannot provide a binary the user named. */
  chosenBy?: string;
}

/** What the decision reads of the machine; tests pass their own. */
export interface Machine {
  /** Whether `command` runs: an executable file at that path, or of that name on PATH. */
  has(command: string): boolean;
  /** The user id of this process (0 is root); undefined where there are none (Windows). */
  uid: number | undefined;
  /** Whether `sudo -n true` succeeds: sudo without a password. Asked only when not root. */
  passwordlessSudo(): boolean;
}

/** What to do about a peer. */
export type PeerPlan =
  | { action: "use" }
  /** Run these commands (each an argv), in order. */
  | { action: "install"; commands: string[][] }
  | { action: "fail"; message: string };

/** The options of {@link requirePeer}; tests replace the machine, the commands and the log. */
export interface RequirePeerOptions {
  machine?: Machine;
  /** Runs one command; rejects with its output when it fails. */
  run?: (command: string[]) => Promise<void>;
  /** Where the one line announcing an install goes. */
  log?: (line: string) => void;
  /** The lock file that keeps two processes from running apt-get at once. */
  lockPath?: string;
  /** How long to wait for another process's install before giving up. */
  lockTimeoutMs?: number;
}

/** The lock every test process takes before it runs apt-get (dpkg refuses a second apt-get at once). */
export const INSTALL_LOCK = join(tmpdir(), "otc-test-peers-install.lock");

/** This machine, as {@link planPeer} reads it. */
export const hostMachine: Machine = {
  has: runs,
  uid: process.getuid?.(),
  passwordlessSudo: () => spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0,
};

/**
 * Decides what to do about a peer: use it when it is there; install it with apt-get when it is missing
 * and this process may (root, or sudo without a password); otherwise fail, naming the one command to run.
 */
export function planPeer(peer: Peer, machine: Machine): PeerPlan {
  if (machine.has(peer.binary)) {
    return { action: "use" };
  }
  if (peer.chosenBy) {
    return fail(
      `${peer.name} not found at ${peer.binary}, which ${peer.chosenBy} names: point ${peer.chosenBy} at a ${peer.name}, or unset it`,
    );
  }
  const missing = `${peer.name} is missing (looked for ${peer.binary})`;
  if (!machine.has("apt-get")) {
    return fail(
      `${missing}, and this machine has no apt-get to install it with. Install it, or on Debian or Ubuntu run: ${INSTALL_COMMAND}`,
    );
  }
  const root = machine.uid === 0;
  if (!root && !machine.passwordlessSudo()) {
    return fail(
      `${missing}, and the tests may not install it (not root, and no sudo without a password). Run: ${INSTALL_COMMAND}`,
    );
  }
  // sudo resets the environment, so the frontend goes through env(1); dpkg's lock may be held a while (unattended upgrades on a fresh machine).
  const aptGet = [
    ...(root ? [] : ["sudo", "-n"]),
    "env",
    "DEBIAN_FRONTEND=noninteractive",
    "apt-get",
    "-o",
    "DPkg::Lock::Timeout=300",
  ];
  return {
    action: "install",
    commands: [
      [...aptGet, "update"],
      [...aptGet, "install", "-y", "--no-install-recommends", peer.package],
    ],
  };
}

/**
 * Makes sure a peer is there, installing it as {@link planPeer} decides (printing one line saying so);
 * rejects with the reason and the command to run when it cannot. One process at a time installs.
 */
export async function requirePeer(peer: Peer, options: RequirePeerOptions = {}): Promise<void> {
  // biome-ignore lint/suspicious/noConsole: the test run says which peer it installs, on the test output
  const { machine = hostMachine, run = runCommand, log = console.warn, lockPath = INSTALL_LOCK } = options;
  const plan = planPeer(peer, machine);
  if (plan.action === "use") {
    return;
  }
  if (plan.action === "fail") {
    throw new Error(plan.message);
  }
  await withLock(lockPath, options.lockTimeoutMs ?? 15 * 60_000, async () => {
    // Another test process may have installed it while this one waited for the lock.
    if (machine.has(peer.binary)) {
      return;
    }
    log(
      `${peer.name} is missing: installing Debian's ${peer.package} (${plan.commands.map((command) => command.join(" ")).join(" && ")})`,
    );
    for (const command of plan.commands) {
      await run(command);
    }
  });
  if (!machine.has(peer.binary)) {
    throw new Error(`apt-get installed ${peer.package}, but ${peer.binary} is still missing. Run: ${INSTALL_COMMAND}`);
  }
}

/**
 * Runs `body` holding the lock file at `path`: created with O_EXCL, holding this process's pid. A lock
 * whose process is gone is stale and taken over; a live one is waited for up to `timeoutMs`.
 */
export async function withLock<T>(path: string, timeoutMs: number, body: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let descriptor: number | undefined;
    try {
      descriptor = openSync(path, "wx");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        throw error;
      }
    }
    if (descriptor !== undefined) {
      try {
        writeSync(descriptor, String(process.pid));
      } finally {
        closeSync(descriptor);
      }
      try {
        return await body();
      } finally {
        unlinkSync(path);
      }
    }
    const holder = lockHolder(path);
    if (holder !== undefined && !alive(holder)) {
      // The process that took it died holding it (killed mid-install): nothing will release it.
      try {
        unlinkSync(path);
      } catch {}
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `waited ${timeoutMs} ms for ${path} (process ${holder ?? "unknown"} installs test peers); remove it if that process is gone`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The pid in a lock file; undefined while it is being written, or when it is gone already. */
function lockHolder(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, "utf8"));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process of that pid exists (EPERM: it does, as another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether `command` names an executable file: a path as is, a bare name in a PATH directory. */
function runs(command: string): boolean {
  const candidates = command.includes("/")
    ? [command]
    : (process.env.PATH ?? "")
        .split(delimiter)
        .filter(Boolean)
        .map((directory) => join(directory, command));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

/** Runs one command, its output kept for the error when it fails. */
function runCommand([file, ...args]: string[]): Promise<void> {
  if (!file) {
    return Promise.reject(new Error("no command to run"));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => {
      if (code === 0) {
        resolve();
      } else {
        reject(
          new Error(
            `${[file, ...args].join(" ")} failed (exit ${code}). Run: ${INSTALL_COMMAND}\n${output.slice(-2_000)}`,
          ),
        );
      }
    });
  });
}

function fail(message: string): PeerPlan {
  return { action: "fail", message };
}
