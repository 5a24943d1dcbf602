// The two test gates leave no test out (every slow test file, `*.slow.test.ts`, belongs to a package whose `test:slow` script runs it, and CI runs both gates), and npm test's files wait on no wall clock, nor set a time limit shorter than the gate's hang guard, without saying why.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { GATE_TIMEOUTS } from "../vitest.gate.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const readJson = (path: string) => JSON.parse(readFileSync(join(root, path), "utf8"));

/** The workspace folders, from the root package.json's globs (each `dir/*` or a plain folder). */
function workspaces(): string[] {
  const tracked = execFileSync(
    "git",
    ["ls-files", "--cached", "--others", "--exclude-standard", "*/package.json", "*/*/package.json"],
    { cwd: root, encoding: "utf8" },
  )
    .split("\n")
    .filter(Boolean)
    .map((path) => dirname(path));
  const globs: string[] = readJson("package.json").workspaces;
  return tracked.filter((dir) =>
    globs.some((glob) => (glob.endsWith("/*") ? dirname(dir) === glob.slice(0, -2) : dir === glob)),
  );
}

const slowFiles = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.slow.test.ts"], {
  cwd: root,
  encoding: "utf8",
})
  .split("\n")
  .filter(Boolean);

describe("the slow gate", () => {
  it("has test files", () => {
    expect(slowFiles.length).toBeGreaterThan(0);
  });

  it("runs every slow test file: its package has a test:slow script that picks the slow files", () => {
    const dirs = workspaces();
    for (const file of slowFiles) {
      const owner = dirs.filter((dir) => file.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length)[0];
      expect(owner, `${file} belongs to no workspace`).toBeDefined();
      const scripts = readJson(`${owner}/package.json`).scripts ?? {};
      expect(scripts["test:slow"], `${owner}/package.json has no test:slow script to run ${file}`).toBe(
        "OTC_TEST_GATE=slow vitest run",
      );
    }
  });

  it("has no test:slow script without slow test files", () => {
    for (const dir of workspaces()) {
      if (readJson(`${dir}/package.json`).scripts?.["test:slow"]) {
        expect(
          slowFiles.some((file) => file.startsWith(`${dir}/`)),
          `${dir} has a test:slow script and no slow file`,
        ).toBe(true);
      }
    }
  });

  it("is run by CI beside npm test, and is provisioned like it", () => {
    const ci = readFileSync(join(root, ".ci/run"), "utf8");
    expect(ci).toMatch(/^[^#\n]*npm test\b/m);
    expect(ci).toMatch(/^[^#\n]*npm run test:slow\b/m);
    const { scripts } = readJson("package.json");
    expect(scripts.test).toMatch(/^npm run test:peers && /);
    expect(scripts["test:slow"]).toMatch(/^npm run test:peers && /);
  });
});

/** A wait on the wall clock: a timer, or a sleep or delay helper. Timers of a test clock (`clock.setTimeout`) are not. */
const WALL_CLOCK_WAIT =
  /(?<![.\w])(?:setTimeout|setInterval|sleep|delay)\(|\b(?:globalThis|window)\.set(?:Timeout|Interval)\(/;

/** npm test's test files: every `*.test.ts` but the slow gate's. */
const gateTestFiles = () =>
  execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.test.ts"], {
    cwd: root,
    encoding: "utf8",
  })
    .split("\n")
    .filter((file) => file && !file.endsWith(".slow.test.ts"));

/** Whether line `index` (0-based) or one of the three above it says why it needs real time (`// real time: ...`). */
const explainedAt = (lines: readonly string[], index: number) =>
  lines.slice(Math.max(0, index - 3), index + 1).some((near) => /\/\/ real time: \S/.test(near));

/** The functions whose last argument may be a time limit: vitest's tests, suites and hooks, and `verifies`. */
const LIMITED = /^(?:it|test|describe|verifies|beforeAll|beforeEach|afterAll|afterEach)$/;

/** The name a call is made through: `it` for `it(...)`, `it.each([...])(...)`, `it.skipIf(x)(...)`, `test.concurrent(...)`. */
function calleeName(expression: ts.Expression): string | undefined {
  if (ts.isIdentifier(expression)) {
    return expression.text;
  }
  if (ts.isPropertyAccessExpression(expression)) {
    return calleeName(expression.expression);
  }
  if (ts.isCallExpression(expression)) {
    return calleeName(expression.expression);
  }
  return undefined;
}

/** A number written out (`60_000`, `2e3`), or undefined for anything else (a name, an expression). */
const literalNumber = (node: ts.Node | undefined) =>
  node && ts.isNumericLiteral(node) ? Number(node.text.replaceAll("_", "")) : undefined;

/**
 * The time limits below `bound` ms written into a test file: a test's, a suite's or a hook's own (its last argument,
 * or its options' `timeout`), and any `timeout` option written as a number (`expect.poll`, `vi.waitFor`, a
 * Playwright wait, a child process's kill). Each as `line: text`, 1-based.
 */
export function shortLimits(source: string, bound: number): { line: number; text: string }[] {
  const file = ts.createSourceFile("test.ts", source, ts.ScriptTarget.Latest, true);
  const found: { line: number; text: string }[] = [];
  const add = (node: ts.Node) =>
    found.push({ line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1, text: node.getText(file) });
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && LIMITED.test(calleeName(node.expression) ?? "") && node.arguments.length > 1) {
      const last = node.arguments[node.arguments.length - 1];
      const value = literalNumber(last);
      if (last && value !== undefined && value < bound) {
        add(last);
      }
    }
    if (ts.isPropertyAssignment(node) && /^(?:timeout|interruptAfterTimeLimit)$/.test(node.name.getText(file))) {
      const value = literalNumber(node.initializer);
      if (value !== undefined && value < bound) {
        add(node);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe("npm test's files", () => {
  it("wait on the wall clock only where a comment says why the test needs real time", () => {
    const unexplained: string[] = [];
    for (const file of gateTestFiles()) {
      const lines = readFileSync(join(root, file), "utf8").split("\n");
      lines.forEach((line, index) => {
        const code = line.replace(/\/\/.*$/, "");
        if (WALL_CLOCK_WAIT.test(code) && !explainedAt(lines, index)) {
          unexplained.push(`${file}:${index + 1}: ${line.trim()}`);
        }
      });
    }
    expect(unexplained, "move the test to a clock or an event, or say why it needs real time").toEqual([]);
  });

  it("set no time limit shorter than the gate's hang guard, unless a comment says why the test needs real time", () => {
    // A limit under the guard turns a busy machine's slowness into a failure: a test is slower there, never wrong.
    const unexplained: string[] = [];
    for (const file of gateTestFiles()) {
      const source = readFileSync(join(root, file), "utf8");
      const lines = source.split("\n");
      for (const { line, text } of shortLimits(source, GATE_TIMEOUTS.testTimeout)) {
        if (!explainedAt(lines, line - 1)) {
          unexplained.push(`${file}:${line}: ${text}`);
        }
      }
    }
    expect(unexplained, "drop the limit (the gate's guard applies), or say why it needs real time").toEqual([]);
  });

  it.each([
    ['it("x", async () => {}, 60_000);', ["60_000"]],
    ['it.each([1])("x %s", async () => {}, 120_000);', ["120_000"]],
    ['test("x", { timeout: 5000 }, () => {});', ["timeout: 5000"]],
    ["beforeAll(async () => {}, 10_000);", ["10_000"]],
    ['verifies("a.b", "does x", { timeout: 1000 }, async () => {});', ["timeout: 1000"]],
    ["await expect.poll(() => x, { timeout: 5_000 }).toBe(1);", ["timeout: 5_000"]],
    ["execFile(bin, [], { timeout: 60_000 }, done);", ["timeout: 60_000"]],
    ["fc.assert(property, { numRuns: 150, interruptAfterTimeLimit: 45_000 });", ["interruptAfterTimeLimit: 45_000"]],
    ['it("x", async () => {}, 600_000);', []],
    ['it("x", { timeout: LIMIT_MS }, () => {});', []],
    ["createClient({ baseUrl, timeoutMs: 100 });", []],
    ['it("x", async () => { add(1, 2); });', []],
  ])("finds the short limits in %s", (source, expected) => {
    expect(shortLimits(source, 300_000).map(({ text }) => text)).toEqual(expected);
  });
});
