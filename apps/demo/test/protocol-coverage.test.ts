// Keeps PROTOCOL-COVERAGE.md honest: every test it names must exist in the file it names.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const table = readFileSync(path.join(root, "PROTOCOL-COVERAGE.md"), "utf8")
  .split("\n")
  .filter((line) => /^\| [0-9]/.test(line));

describe("PROTOCOL-COVERAGE.md", () => {
  it("has a row for every section of docs/protocol.md", () => {
    const sections = new Set(table.map((row) => row.split("|")[1]?.trim().split(".")[0]));
    expect([...sections].sort()).toEqual(["1", "2", "3", "4", "5", "6", "7"]);
  });

  it.each(table.map((row) => [row.split("|")[2]?.trim() ?? "", row] as const))("%s", (_rule, row) => {
    const refs = [...row.matchAll(/`([^`]+\.test\.ts)`: "([^"]+)"/g)];
    expect(refs.length, "the row names at least one test").toBeGreaterThan(0);
    for (const [, file = "", title = ""] of refs) {
      const full = path.join(root, file);
      expect(existsSync(full), file).toBe(true);
      expect(readFileSync(full, "utf8"), `${file} has a test "${title}"`).toContain(title);
    }
  });
});
