// A real PostgreSQL server (Debian's, initdb then postgres) in a temporary folder on a free loopback port, for the stores kept in PostgreSQL; npm test provisions it before the suites run.
import { type ChildProcess, spawn } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { freePort } from "./free-port.js";
import { checkPeer, POSTGRES } from "./peers.js";

/** A PostgreSQL server a test started. */
export interface PostgresServer {
  /** `postgres://otc@127.0.0.1:<port>/postgres`: the superuser `otc`, no password (trust on loopback). */
  url: string;
  port: number;
  /** Stops the server and deletes its folder. */
  close(): Promise<void>;
}

// On import: a suite without its peer fails at once, naming the command that provisions it.
checkPeer(POSTGRES);

/** The uid and gid of Debian's `postgres` user, which runs the server when this process is root (PostgreSQL refuses root). */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) {
    return undefined;
  }
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  const [, , uid, gid] = line?.split(":") ?? [];
  if (uid === undefined || gid === undefined) {
    throw new Error("this process is root, which PostgreSQL refuses, and there is no postgres user to run it as");
  }
  return { uid: Number(uid), gid: Number(gid) };
}

/** Runs one program to its end; rejects with its output when it fails. */
function run(command: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...user });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} failed (exit ${code}): ${output.slice(-2_000)}`)),
    );
  });
}

/**
 * Makes a database cluster in a temporary folder and starts PostgreSQL on it, on a free loopback port, durability
 * off (fsync, synchronous commit: a test's data need not outlive it); resolves once the server says it accepts
 * connections.
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = dirname(POSTGRES.binary);
  const user = postgresUser();
  const folder = mkdtempSync(join(tmpdir(), "otc-postgres-"));
  if (user) {
    chownSync(folder, user.uid, user.gid);
  }
  const data = join(folder, "data");
  const removeFolder = () => rmSync(folder, { recursive: true, force: true });
  let child: ChildProcess | undefined;
  try {
    await run(
      join(bin, "initdb"),
      ["-D", data, "-U", "otc", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"],
      user,
    );
    const port = await freePort();
    const started = spawn(
      join(bin, "postgres"),
      [
        "-D",
        data,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        `unix_socket_directories=${folder}`,
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
      ],
      { stdio: ["ignore", "pipe", "pipe"], ...user },
    );
    child = started;
    let output = "";
    await new Promise<void>((resolve, reject) => {
      const read = (chunk: Buffer) => {
        output += chunk;
        if (output.includes("database system is ready to accept connections")) {
          resolve();
        }
      };
      started.stdout?.on("data", read);
      started.stderr?.on("data", read);
      started.once("error", reject);
      started.once("exit", (code) => reject(new Error(`postgres exited (${code}) on port ${port}: ${output}`)));
    });
    const close = async () => {
      if (started.exitCode === null && started.signalCode === null) {
        const exited = new Promise((resolve) => started.once("exit", resolve));
        // SIGINT is PostgreSQL's fast shutdown: sessions are ended, then the server stops.
        started.kill("SIGINT");
        await exited;
      }
      removeFolder();
    };
    return { url: `postgres://otc@127.0.0.1:${port}/postgres`, port, close };
  } catch (error) {
    child?.kill("SIGKILL");
    removeFolder();
    throw error;
  }
}
