// The `resolve.alias` of every vitest.config.ts: `@otc/*` resolve to their TypeScript sources, the `paths` of tsconfig.sources.json, so no test needs a build first.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));
const readJson = <T>(relative: string) => JSON.parse(readFileSync(root(relative), "utf8")) as T;

const { paths } = readJson<{ compilerOptions: { paths: Record<string, [string]> } }>(
  "./tsconfig.sources.json",
).compilerOptions;

// Every entry point a workspace package exports needs a source path: one left out would resolve to a
// stale (or missing) dist without a word.
const missing = ["packages", "apps", "tests"].flatMap((dir) =>
  readdirSync(root(dir)).flatMap((name) => {
    const manifest = readJson<{ name: string; exports?: Record<string, unknown> }>(`./${dir}/${name}/package.json`);
    return Object.keys(manifest.exports ?? {})
      .filter((entry) => entry !== "./package.json")
      .map((entry) => `${manifest.name}${entry.slice(1)}`)
      .filter((specifier) => !(specifier in paths));
  }),
);
if (missing.length > 0) {
  throw new Error(`tsconfig.sources.json has no source path for ${missing.join(", ")}: add one to its "paths"`);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** One exact-match alias per `@otc/*` specifier, so `@otc/server` never matches a prefix of `@otc/server/core`. */
export const sourceAliases = Object.entries(paths).map(([specifier, [target]]) => ({
  find: new RegExp(`^${escapeRegExp(specifier)}$`),
  replacement: root(target),
}));
