// The two test gates leave no test out (every slow test file, `*.slow.test.ts`, belongs to a package whose `test:slow` script runs it, and CI runs both gates), and npm test's files wait on no wall clock without saying why.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

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

describe("npm test's files", () => {
  it("wait on the wall clock only where a comment says why the test needs real time", () => {
    const gateFiles = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.test.ts"], {
      cwd: root,
      encoding: "utf8",
    })
      .split("\n")
      .filter((file) => file && !file.endsWith(".slow.test.ts"));
    const unexplained: string[] = [];
    for (const file of gateFiles) {
      const lines = readFileSync(join(root, file), "utf8").split("\n");
      lines.forEach((line, index) => {
        const code = line.replace(/\/\/.*$/, "");
        // The line itself or one of the three above it says why, in a comment starting "real time:".
        const explained = lines
          .slice(Math.max(0, index - 3), index + 1)
          .some((near) => /\/\/ real time: \S/.test(near));
        if (WALL_CLOCK_WAIT.test(code) && !explained) {
          unexplained.push(`${file}:${index + 1}: ${line.trim()}`);
        }
      });
    }
    expect(unexplained, "move the test to a clock or an event, or say why it needs real time").toEqual([]);
  });
});
