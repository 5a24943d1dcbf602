// The modules of src import each other without a cycle: what the commands share lives in io.ts, which imports none of them.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const src = path.dirname(fileURLToPath(import.meta.url));

/** Each module of src (tests left out) and the modules of src it imports: static, type-only and dynamic imports alike. */
function importGraph(): Map<string, string[]> {
  const modules = readdirSync(src).filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"));
  const graph = new Map<string, string[]>();
  for (const file of modules) {
    // TypeScript's own scanner: `import type`, `export ... from` and `import("...")` are all found.
    const { importedFiles } = ts.preProcessFile(readFileSync(path.join(src, file), "utf8"), true, true);
    const local = importedFiles
      .map((entry) => entry.fileName)
      .filter((name) => name.startsWith("./"))
      .map((name) => `${name.slice(2).replace(/\.js$/, "")}.ts`);
    graph.set(file, [...new Set(local)]);
  }
  return graph;
}

/** Every import cycle of `graph`, each as the path that closes it (`a.ts -> b.ts -> a.ts`). */
function cycles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const done = new Set<string>();
  const visit = (node: string, trail: string[]) => {
    const at = trail.indexOf(node);
    if (at >= 0) {
      found.push([...trail.slice(at), node].join(" -> "));
      return;
    }
    if (done.has(node)) {
      return;
    }
    for (const next of graph.get(node) ?? []) {
      visit(next, [...trail, node]);
    }
    done.add(node);
  };
  for (const node of graph.keys()) {
    visit(node, []);
  }
  return found;
}

describe("the import graph of src", () => {
  it("reads the imports the commands share from io.ts", () => {
    const graph = importGraph();
    for (const command of ["cli.ts", "inspect-command.ts", "mcp-command.ts", "login.ts"]) {
      expect(graph.get(command), command).toContain("io.ts");
    }
    // cli.ts loads the other commands on demand: dynamic imports are edges too.
    expect(graph.get("cli.ts")).toEqual(expect.arrayContaining(["inspect-command.ts", "mcp-command.ts", "login.ts"]));
    expect(graph.get("io.ts")).toEqual([]);
  });

  it("has no cycle", () => {
    expect(cycles(importGraph())).toEqual([]);
  });

  it("would report a cycle, type-only imports included", () => {
    const graph = new Map([
      ["cli.ts", ["io.ts", "mcp-command.ts"]],
      ["mcp-command.ts", ["cli.ts"]],
      ["io.ts", []],
    ]);
    expect(cycles(graph)).toEqual(["cli.ts -> mcp-command.ts -> cli.ts"]);
    const typeOnly = ts.preProcessFile('import type { Io } from "./cli.js";', true, true);
    expect(typeOnly.importedFiles.map((entry) => entry.fileName)).toEqual(["./cli.js"]);
  });
});
