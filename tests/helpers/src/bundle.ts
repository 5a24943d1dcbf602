// Bundles an entry point as a Workers deployment would (a neutral platform, workerd's conditions), for tests that check an entry runs without Node.
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
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

/**
 * Resolves `@otc/*` to the workspace packages' sources, as the tests do: no build needed. An entry whose package.json
 * export has one of workerd's conditions (`@otc/server/digest`, `@otc/server/validation/default`) resolves to the
 * source of the file that condition selects, as a Workers bundler would pick it; any other, to its `paths` in
 * tsconfig.sources.json.
 */
function workspaceSources(): Plugin {
  const { compilerOptions } = JSON.parse(readFileSync(`${REPO_ROOT}tsconfig.sources.json`, "utf8")) as {
    compilerOptions: { paths: Record<string, [string]> };
  };
  return {
    name: "otc-sources",
    setup(bundler) {
      bundler.onResolve({ filter: /^@otc\// }, (args) => {
        const target = compilerOptions.paths[args.path]?.[0];
        if (!target) {
          return undefined;
        }
        return { path: workerdSource(args.path, target) ?? `${REPO_ROOT}${target}` };
      });
    },
  };
}

/** The source of the file workerd's conditions select for `specifier`, whose default's source is `source`; if any. */
function workerdSource(specifier: string, source: string): string | undefined {
  const entry = /^@otc\/[^/]+(\/.*)?$/.exec(specifier)?.[1] ?? "";
  const packageDir = /^\.\/((?:packages|apps|tests)\/[^/]+)\//.exec(source)?.[1];
  return packageDir && exportedSource(`${REPO_ROOT}${packageDir}`, `.${entry}`, WORKERD_BUILD.conditions);
}

const manifests = new Map<string, Record<string, string | Record<string, string>> | undefined>();

/**
 * The source (`src/....ts`) of the file the export `entry` (`"."`, `"./digest"`) of the package at `packageDir`
 * selects under `conditions`, as a bundler picks it: the export's first condition among them, a plain string export
 * counting as `default`; undefined when none of them applies.
 */
export function exportedSource(packageDir: string, entry: string, conditions: readonly string[]): string | undefined {
  if (!manifests.has(packageDir)) {
    const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
      exports?: Record<string, string | Record<string, string>>;
    };
    manifests.set(packageDir, manifest.exports);
  }
  const exported = manifests.get(packageDir)?.[entry];
  const target =
    typeof exported === "string"
      ? conditions.includes("default")
        ? exported
        : undefined
      : Object.entries(exported ?? {}).find(([condition]) => conditions.includes(condition))?.[1];
  return target && join(packageDir, target.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"));
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
