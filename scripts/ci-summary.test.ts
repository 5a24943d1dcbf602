// The closing lines CI prints from a test log: the totals, and each failure's name and error where CI shows them.
import { execFileSync, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("./ci-summary.mjs", import.meta.url));
const summary = (log: string, run = "Node v20") =>
  execFileSync(process.execPath, [script, run], { input: log, encoding: "utf8" });

// What turbo prints around vitest's output, colours included, as in a real run.
const passing = [
  "@otc/a:test: \u001b[2m      Tests \u001b[22m \u001b[1m\u001b[32m12 passed\u001b[39m\u001b[22m\u001b[90m (12)\u001b[39m",
].join("\n");
const failing = [
  "@otc/b:test:  ❯ test/x.test.ts (3 tests | 1 failed) 9ms",
  "@otc/b:test:      × waits in time 7ms",
  "@otc/b:test: ⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯",
  "@otc/b:test: ",
  "@otc/b:test:  \u001b[31mFAIL\u001b[39m  test/x.test.ts > timing > waits in time",
  "@otc/b:test: AssertionError: batches: expected 61 to be less than 60",
  "@otc/b:test: ⎯⎯⎯⎯⎯⎯ Unhandled Rejection ⎯⎯⎯⎯⎯⎯",
  "@otc/b:test: Error: socket hang up",
  "@otc/b:test:       Tests  1 failed | 2 passed (3)",
  "@otc/b#test:  ERROR  command (/repo/b) /usr/bin/npm run test exited (1)",
  "Failed:    @otc/b#test",
].join("\n");

describe("ci-summary", () => {
  it("sums every suite's tests into the closing lines", () => {
    expect(summary(`${passing}\n${passing}`)).toBe("2 test suites (Node v20)\nTests: 24 passed, 0 failed (Node v20)\n");
  });

  it("names each failed test and its error, and the failed tasks, above the totals", () => {
    expect(summary(`${passing}\n${failing}`)).toBe(
      [
        "Failures (Node v20):",
        "  @otc/b: test/x.test.ts > timing > waits in time",
        "    AssertionError: batches: expected 61 to be less than 60",
        "  @otc/b: Unhandled Rejection",
        "    Error: socket hang up",
        "  turbo tasks failed: @otc/b#test",
        "2 test suites (Node v20)",
        "Tests: 14 passed, 1 failed (Node v20)",
        "",
      ].join("\n"),
    );
  });

  it("fails when the log shows no test", () => {
    const ran = spawnSync(process.execPath, [script], { input: "npm error code 1\n", encoding: "utf8" });
    expect(ran.status).toBe(1);
    expect(ran.stdout).toBe("0 test suites\nTests: 0 passed, 0 failed\n");
  });
});
