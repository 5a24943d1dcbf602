// Bundles an entry point as a Workers deployment would (a neutral platform, workerd's conditions), for tests that check an entry runs without Node.
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { fileURLToPath } from "node:url";
import { type BuildOptions, build, type Plugin } from "esbuild";

/** esbuild's options for code that runs on workerd: a neutral platform, resolved with the conditions Workers' bundlers use. */
export const WORKERD_BUILD = {
  bundle: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["module", "main"],
  conditions: ["workerd", "worker", "browser"],
  logLevel: "silent",
} as const satisfies BuildOptions;

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** `node:<anything>`, or the bare name of a Node built-in (`fs`, `fs/promises`, `util`, ...). */
const NODE_BUILTIN = new RegExp(
  `^(?:node:.*|(?:${builtinModules.map((name) => name.replace(/[/.]/g, "\\$&")).join("|")})(?:/.*)?)$`,
);

/** Resolves `@otc/*` to the workspace packages' sources (tsconfig.sources.json's `paths`), as the tests do: no build needed. */
function workspaceSources(): Plugin {
  const { compilerOptions } = JSON.parse(readFileSync(`${REPO_ROOT}tsconfig.sources.json`, "utf8")) as {
    compilerOptions: { paths: Record<string, [string]> };
  };
  return {
    name: "otc-sources",
    setup(bundler) {
      bundler.onResolve({ filter: /^@otc\// }, (args) => {
        const target = compilerOptions.paths[args.path]?.[0];
        return target ? { path: `${REPO_ROOT}${target}` } : undefined;
      });
    },
  };
}

/**
 * Bundles `entry` (an absolute path) for workerd with `@otc/*` taken from their sources, and resolves with the
 * bundle's code. Rejects when the code imports any Node built-in (`node:*` or a bare `fs`, `util`, ...), naming each
 * with the file that imports it: on workerd without `nodejs_compat` there is none.
 *
 * @example
 * const code = await bundleWithoutNode(fileURLToPath(new URL("../src/fetch.ts", import.meta.url)));
 * expect(code).toContain("createFetchHandler");
 */
export async function bundleWithoutNode(entry: string): Promise<string> {
  const builtins: string[] = [];
  const result = await build({
    ...WORKERD_BUILD,
    entryPoints: [entry],
    write: false,
    plugins: [
      workspaceSources(),
      {
        name: "node-builtins",
        setup(bundler) {
          bundler.onResolve({ filter: NODE_BUILTIN }, (args) => {
            builtins.push(`${args.path} (from ${args.importer.replace(REPO_ROOT, "")})`);
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  if (builtins.length > 0) {
    throw new Error(`${entry} imports Node built-ins:\n${builtins.join("\n")}`);
  }
  return result.outputFiles[0]?.text ?? "";
}
