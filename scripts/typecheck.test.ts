// The root type-check program (tsconfig.typecheck.json) checks exactly the files of the workspaces it stands for, and each of them leaves its type-check to it.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));

/** A tsconfig as TypeScript reads it: its files (relative to the root, sorted) and the options it sets itself. */
function program(configPath: string): { files: string[]; raw: { extends?: string; compilerOptions?: object } } {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (!parsed) {
    throw new Error(`${configPath} could not be read`);
  }
  const raw = ts.readConfigFile(configPath, ts.sys.readFile).config as { extends?: string; compilerOptions?: object };
  return { files: parsed.fileNames.map((file) => relative(root, file)).sort(), raw };
}

/** Whether a workspace's tsconfig.json is tsconfig.sources.json with an include list and nothing of its own. */
function standsForIt(raw: { extends?: string; compilerOptions?: object }, dir: string): boolean {
  const extended = raw.extends ? relative(root, join(root, dir, raw.extends)) : "";
  const own = Object.keys(raw.compilerOptions ?? {}).filter((option) => option !== "noEmit");
  return extended === "tsconfig.sources.json" && own.length === 0;
}

const workspaces = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*/package.json"], {
  cwd: root,
  encoding: "utf8",
})
  .split("\n")
  .filter((path) => path && !path.includes("node_modules") && existsSync(join(root, dirname(path), "tsconfig.json")))
  .map((path) => dirname(path))
  .filter((dir) => dir.split("/").length <= 2 && dir !== "examples");

describe("the root type-check program", () => {
  const covered = workspaces.filter((dir) => standsForIt(program(join(root, dir, "tsconfig.json")).raw, dir));

  it("stands for the workspaces whose tsconfig.json has no options of its own", () => {
    expect(covered).toEqual(expect.arrayContaining(["packages/server", "apps/demo", "tests/e2e"]));
    expect(covered).not.toContain("tests/browser");
  });

  it("checks exactly their files, each once", () => {
    const theirs = [...new Set(covered.flatMap((dir) => program(join(root, dir, "tsconfig.json")).files))].sort();
    expect(program(join(root, "tsconfig.typecheck.json")).files).toEqual(theirs);
  });

  it("is the only program that checks them: none of them type-checks its own tsconfig.json", () => {
    for (const dir of covered) {
      const script: string = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")).scripts?.typecheck ?? "";
      // `tsc --noEmit` alone (or first) reads the workspace's own tsconfig.json; `-p` names another one.
      expect(
        script.split("&&").some((step) => /^\s*tsc\b(?!.*\s-p\s)/.test(step)),
        `${dir}: ${script}`,
      ).toBe(false);
    }
  });

  it("runs in npm test", () => {
    const { scripts } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    expect(scripts["typecheck:sources"]).toBe("tsc -p tsconfig.typecheck.json");
    expect(scripts.test).toMatch(/turbo run [^&]*\btypecheck:sources\b/);
  });
});
