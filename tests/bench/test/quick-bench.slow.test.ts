/** Runs the benchmark's `--quick` mode end to end: every stack starts and answers, every row and ratio is produced (no timing is judged). */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const run = path.join(root, "bench/run.mjs");

interface Row {
  stack: string;
  scenario: string;
  rounds: number;
  rps: number | null;
  p50: number | null;
  p99: number | null;
  cpuUs: number | null;
  rssMb: number | null;
  errors: number;
}
interface Report {
  quick: boolean;
  nativeAdapter: string;
  results: Row[];
  ratios: { label: string; value: number | null; pass?: boolean; op: string; target: number }[];
  cold: { label: string; healthMs?: number; callMs?: number; note?: string }[];
  problems: string[];
}

const STACKS = ["native", "express", "floor", "express-ajv", "express-oav", "fastify", "mcp", "mcp-v2"];
const OURS = ["native", "express"];

let dir: string;
let markdown: string;
let report: Report;
let exitCode: number;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "otc-bench-"));
  const out = path.join(dir, "quick.md");
  try {
    await promisify(execFile)(process.execPath, [run, "--quick", "--out", out], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
    });
    exitCode = 0;
  } catch (error) {
    exitCode = (error as { code?: number }).code ?? -1;
  }
  markdown = await readFile(out, "utf8");
  report = JSON.parse(await readFile(path.join(dir, "quick.json"), "utf8")) as Report;
});

afterAll(async () => {
  if (dir) {
    await rm(dir, { recursive: true, force: true });
  }
});

const row = (stack: string, scenario: string) =>
  report.results.find((r) => r.stack === stack && r.scenario === scenario);

describe("npm run bench -- --quick", () => {
  it("finishes without a problem", () => {
    expect(report.problems).toEqual([]);
    expect(exitCode).toBe(0);
    expect(report.quick).toBe(true);
  });

  it("measures a call on every stack, with every figure", () => {
    for (const stack of STACKS) {
      const call = row(stack, "call");
      expect(call, stack).toBeDefined();
      expect(call?.rounds, stack).toBe(1);
      expect(call?.errors, stack).toBe(0);
      for (const figure of [call?.rps, call?.cpuUs, call?.rssMb]) {
        expect(figure, stack).toBeGreaterThan(0);
      }
      expect(call?.p99, stack).toBeGreaterThanOrEqual(call?.p50 ?? Number.POSITIVE_INFINITY);
    }
  });

  it("measures our adapters on the rows their ratios need", () => {
    for (const stack of OURS) {
      for (const scenario of ["list", "list1000", "jwt", "replay"]) {
        const measured = row(stack, scenario);
        expect(measured, `${stack} ${scenario}`).toBeDefined();
        expect(measured?.errors, `${stack} ${scenario}`).toBe(0);
        expect(measured?.cpuUs, `${stack} ${scenario}`).toBeGreaterThan(0);
      }
    }
  });

  it("computes every ratio and marks it against its target", () => {
    expect(report.ratios.length).toBeGreaterThanOrEqual(11);
    for (const ratio of report.ratios) {
      expect(ratio.value, ratio.label).toBeGreaterThan(0);
      expect(typeof ratio.pass, ratio.label).toBe("boolean");
      expect(markdown).toContain(`| ${ratio.label}`);
    }
    for (const needed of ["native vs floor", "native vs Fastify", "native vs MCP", "Express adapter vs MCP"]) {
      expect(
        report.ratios.some((ratio) => ratio.label.startsWith(needed)),
        needed,
      ).toBe(true);
    }
  });

  it("times the demo's cold start", () => {
    const express = report.cold.find((entry) => entry.label.includes("Express adapter"));
    expect(express?.healthMs).toBeGreaterThan(0);
    expect(express?.callMs).toBeGreaterThanOrEqual(express?.healthMs ?? Number.POSITIVE_INFINITY);
  });

  it("writes a Markdown report that says where and how it ran", () => {
    expect(markdown).toMatch(/^# OXP server benchmark/);
    for (const heading of ["- Machine:", "- Node v", "- Pinning:", "- Native adapter:", "## Ratios", "## Rows"]) {
      expect(markdown).toContain(heading);
    }
    const rows = markdown.split("\n").filter((line) => /^\| call Calculator\.Add \|/.test(line));
    expect(rows).toHaveLength(STACKS.length);
  });
});
