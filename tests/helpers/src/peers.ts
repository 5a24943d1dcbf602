// Real peers the tests start (redis-server, PostgreSQL, Chromium, the Node 22 of the MCP conformance suite): provisioned in one step before any suite runs (apt-get where the machine allows it, else a failure naming the one command), and only checked by the suites.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, readdirSync, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The one command that gives a Debian or Ubuntu machine every peer the tests need. */
export const INSTALL_COMMAND = "sudo apt-get install redis-server postgresql chromium";

/** A program the tests run. */
export interface Peer {
  /** Its name in messages, e.g. `redis-server`. */
  name: string;
  /**
   * The command (looked up on PATH) or the absolute path the tests run. May be a getter, read again after an
   * install, for a program whose path is known only once it is installed ({@link POSTGRES}).
   */
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

/** The options of {@link provisionPeers}; tests replace the machine, the commands and the log. */
export interface ProvisionOptions {
  machine?: Machine;
  /** Runs one command; rejects with its output when it fails. */
  run?: (command: string[]) => Promise<void>;
  /** Where the line announcing each install goes. */
  log?: (line: string) => void;
  /** The Node version the suites run on (`process.versions.node`). */
  nodeVersion?: string;
  /** Whether the pinned Node 22 is installed in {@link NODE22_DIR}. */
  hasNode22?: () => boolean;
}

/** The command that provisions every peer, run by `npm test` before any suite; named where one is missing. */
export const PROVISION_COMMAND = "npm run test:peers";

/** redis-server, for the shared-state tests: `REDIS_SERVER` if set, else the one on PATH. */
export const REDIS_SERVER: Peer = process.env.REDIS_SERVER
  ? { name: "redis-server", binary: process.env.REDIS_SERVER, package: "redis-server", chosenBy: "REDIS_SERVER" }
  : { name: "redis-server", binary: "redis-server", package: "redis-server" };

/** Where Debian keeps the server programs of each PostgreSQL major, in `<major>/bin`: not on PATH. */
export const POSTGRES_LIB_DIR = "/usr/lib/postgresql";

/** The bin folder of the newest PostgreSQL major under `root` that has a `postgres` program, if any. */
export function postgresBinDir(root = POSTGRES_LIB_DIR): string | undefined {
  let majors: string[];
  try {
    majors = readdirSync(root).filter((name) => /^\d+(\.\d+)?$/.test(name));
  } catch {
    return undefined;
  }
  return majors
    .sort((a, b) => Number(b) - Number(a))
    .map((major) => join(root, major, "bin"))
    .find((dir) => runs(join(dir, "postgres")));
}

/**
 * Debian's PostgreSQL server (`postgres`, beside its `initdb`), for the stores kept in PostgreSQL: in
 * `POSTGRES_BINDIR` if set, else the newest major in {@link POSTGRES_LIB_DIR}, looked up whenever it is asked for,
 * since the major is known only once apt-get has installed one.
 */
export const POSTGRES: Peer = process.env.POSTGRES_BINDIR
  ? {
      name: "postgres",
      binary: join(process.env.POSTGRES_BINDIR, "postgres"),
      package: "postgresql",
      chosenBy: "POSTGRES_BINDIR",
    }
  : {
      name: "postgres",
      package: "postgresql",
      get binary() {
        return join(postgresBinDir() ?? join(POSTGRES_LIB_DIR, "<major>", "bin"), "postgres");
      },
    };

/** Debian's Chromium, for the browser tests (driven by playwright-core). */
export const CHROMIUM: Peer = { name: "chromium", binary: "/usr/bin/chromium", package: "chromium" };

/** Every program the suites start. */
export const PEERS: readonly Peer[] = [REDIS_SERVER, POSTGRES, CHROMIUM];

/** The oldest Node major the official MCP conformance suite runs on. */
export const NODE22_MAJOR = 22;

/**
 * The folder whose pinned `node` package gives the MCP conformance suite its Node when the tests run on an older
 * one. No workspace: its `node` bin would otherwise be linked into the repository's node_modules/.bin and run every
 * npm script.
 */
export const NODE22_DIR = fileURLToPath(new URL("../node22/", import.meta.url));

/** The Node binary of {@link NODE22_DIR}, installed or not. */
export const NODE22_BINARY = join(NODE22_DIR, "node_modules", "node", "bin", "node");

/** Whether the tests run on a Node older than the MCP conformance suite needs. */
export function needsNode22(nodeVersion = process.versions.node): boolean {
  return Number(nodeVersion.split(".")[0]) < NODE22_MAJOR;
}

/** This machine, as {@link planPeer} reads it. */
export const hostMachine: Machine = {
  has: runs,
  uid: process.getuid?.(),
  passwordlessSudo: () => spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0,
};

/**
 * Decides what to do about the peers: use them when all are there; install the missing ones with one apt-get when
 * this process may (root, or sudo without a password); otherwise fail, naming the one command to run.
 */
export function planPeers(peers: readonly Peer[], machine: Machine): PeerPlan {
  const missing = peers.filter((peer) => !machine.has(peer.binary));
  if (missing.length === 0) {
    return { action: "use" };
  }
  const chosen = missing.find((peer) => peer.chosenBy);
  if (chosen?.chosenBy) {
    return fail(
      `${chosen.name} not found at ${chosen.binary}, which ${chosen.chosenBy} names: point ${chosen.chosenBy} at a ${chosen.name}, or unset it`,
    );
  }
  const what = `${missing.map((peer) => peer.name).join(" and ")} ${missing.length === 1 ? "is" : "are"} missing (looked for ${missing.map((peer) => peer.binary).join(" and ")})`;
  if (!machine.has("apt-get")) {
    return fail(
      `${what}, and this machine has no apt-get to install ${missing.length === 1 ? "it" : "them"} with. Install ${missing.length === 1 ? "it" : "them"}, or on Debian or Ubuntu run: ${INSTALL_COMMAND}`,
    );
  }
  const root = machine.uid === 0;
  if (!root && !machine.passwordlessSudo()) {
    return fail(
      `${what}, and the tests may not install them (not root, and no sudo without a password). Run: ${INSTALL_COMMAND}`,
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
      [...aptGet, "install", "-y", "--no-install-recommends", ...missing.map((peer) => peer.package)],
    ],
  };
}

/**
 * Makes sure every peer the suites start is there before any suite runs: the missing programs installed with one
 * apt-get as {@link planPeers} decides, and on a Node older than 22 the pinned Node 22 of {@link NODE22_DIR}
 * (`npm ci` there). Prints one line for each thing it installs, nothing when all are there; rejects with the reason
 * and the command to run when it cannot.
 */
export async function provisionPeers(peers: readonly Peer[] = PEERS, options: ProvisionOptions = {}): Promise<void> {
  const {
    machine = hostMachine,
    run = runCommand,
    // biome-ignore lint/suspicious/noConsole: the test run says what it installs, on its output
    log = console.log,
    nodeVersion = process.versions.node,
    hasNode22 = () => runs(NODE22_BINARY),
  } = options;
  const plan = planPeers(peers, machine);
  if (plan.action === "fail") {
    throw new Error(plan.message);
  }
  if (plan.action === "install") {
    const command = plan.commands.map((argv) => argv.join(" ")).join(" && ");
    for (const peer of peers.filter((each) => !machine.has(each.binary))) {
      log(`test peers: installing ${peer.name} (Debian's ${peer.package}) with apt-get: ${command}`);
    }
    for (const argv of plan.commands) {
      await run(argv);
    }
    const still = peers.filter((peer) => !machine.has(peer.binary));
    if (still.length > 0) {
      throw new Error(
        `apt-get ran, but ${still.map((peer) => peer.binary).join(" and ")} ${still.length === 1 ? "is" : "are"} still missing. Run: ${INSTALL_COMMAND}`,
      );
    }
  }
  if (needsNode22(nodeVersion) && !hasNode22()) {
    const argv = ["npm", "ci", "--prefix", NODE22_DIR, "--no-audit", "--no-fund"];
    log(
      `test peers: installing Node ${NODE22_MAJOR} for the MCP conformance suite (this is Node ${nodeVersion}): ${argv.join(" ")}`,
    );
    await run(argv);
    if (!hasNode22()) {
      throw new Error(`${argv.join(" ")} installed no ${NODE22_BINARY}`);
    }
  }
}

/**
 * Throws unless `peer` is there, naming the command that provisions it: a suite never installs anything, since
 * an install outlasts any test's time limit and competes with the suites running beside it.
 */
export function checkPeer(peer: Peer, machine: Machine = hostMachine): void {
  if (!machine.has(peer.binary)) {
    throw new Error(
      `${peer.name} is missing (looked for ${peer.binary}): \`npm test\` provisions it before the suites run; alone, run \`${PROVISION_COMMAND}\` (or ${INSTALL_COMMAND})`,
    );
  }
}

/** The Node binary the MCP conformance suite runs on: this process's on Node 22 or later, else {@link NODE22_BINARY}. */
export function node22(): string {
  if (!needsNode22()) {
    return process.execPath;
  }
  if (!runs(NODE22_BINARY)) {
    throw new Error(
      `The MCP conformance suite needs Node ${NODE22_MAJOR}+ and this is Node ${process.versions.node}: \`npm test\` provisions it before the suites run; alone, run \`${PROVISION_COMMAND}\``,
    );
  }
  return NODE22_BINARY;
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
            `${[file, ...args].join(" ")} failed (exit ${code}); run it yourself to see why, or ${INSTALL_COMMAND}\n${output.slice(-2_000)}`,
          ),
        );
      }
    });
  });
}

function fail(message: string): PeerPlan {
  return { action: "fail", message };
}
