/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, its `server` command) against an
 * MCP endpoint, on a Node it accepts, and reads back what each scenario reported.
 */
import { type SpawnOptions, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { node22 } from "@otc/test-helpers/peers";
import { GATE_TIMEOUTS } from "../../../vitest.gate.js";

/** What one check of a scenario reported (the suite's `ConformanceCheck`, the fields read here). */
export interface SuiteCheck {
  id: string;
  name: string;
  description: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "SKIPPED" | "INFO";
  errorMessage?: string;
  details?: Record<string, unknown>;
}

/** The suite's run: each scenario's checks by name, in the order it ran them, and its console output. */
export interface SuiteRun {
  scenarios: Map<string, SuiteCheck[]>;
  output: string;
  exitCode: number | null;
}

/**
 * Whether a scenario passed: at least one check succeeded and none failed or warned. The suite's own baseline
 * rule (`--expected-failures`) counts a WARNING as a failure too; a scenario that only warned tested nothing.
 */
export function passed(checks: readonly SuiteCheck[]): boolean {
  return (
    checks.some((check) => check.status === "SUCCESS") &&
    !checks.some((check) => check.status === "FAILURE" || check.status === "WARNING")
  );
}

/** The checks of a scenario that failed or warned, as `Name: message` lines. */
export function problems(checks: readonly SuiteCheck[]): string[] {
  return checks
    .filter((check) => check.status === "FAILURE" || check.status === "WARNING")
    .map((check) => `${check.name}: ${check.errorMessage ?? check.description}`);
}

/**
 * How long the suite may run before the process is killed: only a guard against a hang (it takes a few seconds on
 * a quiet machine), ending before the hook that runs it does (its limit is the gate's), so that a killed suite's
 * output is still reported.
 */
const TIME_LIMIT_MS = GATE_TIMEOUTS.hookTimeout - 30_000;

/** How a command ended: its stdout and stderr together, its exit code, the signal that killed it. */
interface Ended {
  output: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs a command to its end, killed past {@link TIME_LIMIT_MS}. */
function runToEnd(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"], timeout: TIME_LIMIT_MS });
    let output = "";
    const keep = (chunk: unknown) => {
      output += String(chunk);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ output, code, signal }));
  });
}

/** How a command that did not succeed ended, for a message. */
const howItEnded = ({ code, signal }: Ended) =>
  signal ? `was killed (${signal}) after ${TIME_LIMIT_MS} ms` : `exited ${code}`;

/**
 * The node binary to run the suite with: this process's on Node 22 or later (CI's second run, on Node 24), else the
 * pinned Node 22 that `npm test` provisions before the suites run.
 */
export const suiteNode = node22;

/** The suite's CLI, as installed in the repository's node_modules (a devDependency of tests/mcp). */
export function suiteCli(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("@modelcontextprotocol/conformance/package.json");
  return join(dirname(manifest), "dist", "index.js");
}

/** A result folder's name: `server-<scenario>-<ISO time with : and . as ->`. */
const RESULT_DIR = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

/** Options of {@link runSuite}. */
export interface RunSuiteOptions {
  /** The node binary to run the suite with ({@link suiteNode}). */
  node: string;
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  /**
   * The scenarios expected to fail, given to the suite as its `--expected-failures` baseline: it then exits 0
   * only when exactly those fail (a listed one that passes is a stale entry, an unlisted one that fails a
   * regression), by its own rule, in which a warning counts as a failure.
   */
  expectedFailures?: readonly string[];
}

/**
 * Runs the suite's active server scenarios (its default: all but the pending ones) against `url`, one after
 * another, and reads the checks each saved (`-o`: `server-<scenario>-<time>/checks.json`), in the order it ran
 * them. The exit code is the suite's own verdict (null when it was killed, past {@link TIME_LIMIT_MS}).
 */
export async function runSuite(options: RunSuiteOptions): Promise<SuiteRun> {
  const outputDir = await mkdtemp(join(tmpdir(), "otc-mcp-conformance-"));
  try {
    const args = [suiteCli(), "server", "--url", options.url, "-o", join(outputDir, "results")];
    if (options.expectedFailures) {
      const baseline = join(outputDir, "expected-failures.yml");
      await writeFile(baseline, `server:\n${options.expectedFailures.map((name) => `  - ${name}\n`).join("")}`);
      args.push("--expected-failures", baseline);
    }
    const ended = await runToEnd(options.node, args);
    const output = ended.signal ? `${ended.output}\n(the suite ${howItEnded(ended)})` : ended.output;
    // The order the suite ran them in, from its "=== Running scenario: <name> ===" lines.
    const order = [...output.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((match) => match[1] as string);
    const saved = new Map<string, SuiteCheck[]>();
    const results = join(outputDir, "results");
    for (const entry of existsSync(results) ? await readdir(results) : []) {
      const scenario = RESULT_DIR.exec(entry)?.[1];
      if (scenario) {
        saved.set(scenario, JSON.parse(await readFile(join(results, entry, "checks.json"), "utf8")) as SuiteCheck[]);
      }
    }
    const scenarios = new Map<string, SuiteCheck[]>();
    for (const scenario of order) {
      // A scenario that threw saved nothing: the suite printed why.
      scenarios.set(scenario, saved.get(scenario) ?? []);
    }
    return { scenarios, output, exitCode: ended.code };
  } finally {
    await rm(outputDir, { recursive: true, force: true });
  }
}
