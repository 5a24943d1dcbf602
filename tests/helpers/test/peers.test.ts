// The peers' provisioning (use, install with one apt-get, or fail naming the command) on machines described to it, and the suites' check; nothing here runs apt-get.
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import {
  checkPeer,
  hostMachine,
  INSTALL_COMMAND,
  type Machine,
  NODE22_DIR,
  type Peer,
  PROVISION_COMMAND,
  planPeers,
  provisionPeers,
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

describe("planPeers", () => {
  it("uses a peer that is there, asking nothing else", () => {
    const here = machine({ has: ["redis-server"], uid: 1000 });
    expect(planPeers([REDIS], here)).toEqual({ action: "use" });
    expect(here.sudoProbes).toBe(0);
  });

  it("installs a missing peer as root with apt-get update, then apt-get install of its package alone", () => {
    const root = machine({ has: ["apt-get"], uid: 0 });
    expect(planPeers([CHROMIUM], root)).toEqual({
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
    expect(planPeers([REDIS], user)).toEqual({
      action: "install",
      commands: [
        ["sudo", "-n", ...APT, "update"],
        ["sudo", "-n", ...APT, "install", "-y", "--no-install-recommends", "redis-server"],
      ],
    });
  });

  it("fails at once, naming the one command, for a user whose sudo asks for a password", () => {
    const plan = planPeers([REDIS], machine({ has: ["apt-get"], uid: 1000, sudo: false }));
    expect(plan.action).toBe("fail");
    expect(plan).toMatchObject({ message: expect.stringContaining(`Run: ${INSTALL_COMMAND}`) });
    expect(plan).toMatchObject({ message: expect.stringContaining("redis-server is missing") });
  });

  it("fails, naming the command, on a machine without apt-get, even as root", () => {
    const plan = planPeers([CHROMIUM], machine({ has: [], uid: 0 }));
    expect(plan).toMatchObject({ action: "fail", message: expect.stringContaining("no apt-get") });
    expect(plan).toMatchObject({ message: expect.stringContaining(INSTALL_COMMAND) });
  });

  it("fails on Windows-like machines with no uid and no sudo", () => {
    expect(planPeers([REDIS], machine({ has: ["apt-get"] }))).toMatchObject({ action: "fail" });
  });

  it("never installs over a binary an environment variable chose: it names the variable", () => {
    const chosen: Peer = { ...REDIS, binary: "/opt/redis/bin/redis-server", chosenBy: "REDIS_SERVER" };
    const plan = planPeers([chosen], machine({ has: ["apt-get"], uid: 0 }));
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

describe("planPeers, several peers", () => {
  it("installs every missing peer with one apt-get install, and leaves out the ones there", () => {
    const root = machine({ has: ["apt-get", "/usr/bin/chromium"], uid: 0 });
    expect(planPeers([REDIS, CHROMIUM], root)).toMatchObject({
      action: "install",
      commands: [
        [...APT, "update"],
        [...APT, "install", "-y", "--no-install-recommends", "redis-server"],
      ],
    });
    const bare = machine({ has: ["apt-get"], uid: 0 });
    expect(planPeers([REDIS, CHROMIUM], bare)).toMatchObject({
      commands: [
        [...APT, "update"],
        [...APT, "install", "-y", "--no-install-recommends", "redis-server", "chromium"],
      ],
    });
  });
});

describe("provisionPeers", () => {
  const node20 = { nodeVersion: "20.20.2", hasNode22: () => true };

  it("runs one apt-get for every missing peer, printing one line for each, before anything else", async () => {
    const root = machine({ has: ["apt-get"], uid: 0 });
    const ran: string[][] = [];
    const lines: string[] = [];
    await provisionPeers([REDIS, CHROMIUM], {
      ...node20,
      machine: root,
      log: (line) => lines.push(line),
      run: async (command) => {
        ran.push(command);
        if (command.includes("install")) {
          root.installed.add("redis-server");
          root.installed.add("/usr/bin/chromium");
        }
      },
    });
    expect(ran.map((command) => command.slice(APT.length))).toEqual([
      ["update"],
      ["install", "-y", "--no-install-recommends", "redis-server", "chromium"],
    ]);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^test peers: installing redis-server \(Debian's redis-server\) with apt-get: .*apt-get .*install/,
    );
    expect(lines[1]).toMatch(/^test peers: installing chromium \(Debian's chromium\)/);
  });

  it("does nothing, and prints nothing, when every peer is there", async () => {
    const lines: string[] = [];
    await provisionPeers([REDIS], {
      ...node20,
      machine: machine({ has: ["redis-server"], uid: 0 }),
      log: (line) => lines.push(line),
      run: () => Promise.reject(new Error("must not run")),
    });
    expect(lines).toEqual([]);
  });

  it("rejects with the plan's message, running nothing, where it may not install", async () => {
    const ran: string[][] = [];
    const attempt = provisionPeers([CHROMIUM], {
      ...node20,
      machine: machine({ has: ["apt-get"], uid: 1000, sudo: false }),
      run: async (command) => {
        ran.push(command);
      },
    });
    await expect(attempt).rejects.toThrow(INSTALL_COMMAND);
    expect(ran).toEqual([]);
  });

  it("rejects when apt-get succeeded but a binary is still missing", async () => {
    const attempt = provisionPeers([CHROMIUM], {
      ...node20,
      machine: machine({ has: ["apt-get"], uid: 0 }),
      log: () => {},
      run: async () => {},
    });
    await expect(attempt).rejects.toThrow(/still missing/);
  });

  it("installs the pinned Node 22 on an older Node where it is missing, and not on Node 22 or later", async () => {
    const there = machine({ has: ["redis-server"], uid: 0 });
    let installed = false;
    const ran: string[][] = [];
    const lines: string[] = [];
    const options = {
      machine: there,
      hasNode22: () => installed,
      log: (line: string) => lines.push(line),
      run: async (command: string[]) => {
        ran.push(command);
        installed = true;
      },
    };
    await provisionPeers([REDIS], { ...options, nodeVersion: "24.1.0" });
    expect(ran).toEqual([]);
    await provisionPeers([REDIS], { ...options, nodeVersion: "20.20.2" });
    expect(ran).toEqual([["npm", "ci", "--prefix", NODE22_DIR, "--no-audit", "--no-fund"]]);
    expect(lines).toEqual([expect.stringMatching(/^test peers: installing Node 22 for the MCP conformance suite/)]);
  });
});

describe("checkPeer", () => {
  it("passes a peer that is there, and names the provisioning command for one that is not", () => {
    expect(() => checkPeer(REDIS, machine({ has: ["redis-server"] }))).not.toThrow();
    expect(() => checkPeer(REDIS, machine({ has: [] }))).toThrow(PROVISION_COMMAND);
  });
});
