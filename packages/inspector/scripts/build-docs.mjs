/** Build step for /docs: copies Scalar's prebuilt browser bundle and the page's own files into dist/docs under content-hashed names. */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(packageDir, "dist", "docs");
const require = createRequire(import.meta.url);
// The package's exports list neither its browser bundle nor its manifest: its folder is two up from its entry (dist/index.js).
const scalarDir = join(dirname(require.resolve("@scalar/api-reference")), "..");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

/** Writes `content` as `<stem>-<hash><ext>` and returns that name. */
function emit(stem, ext, content) {
  const hash = createHash("sha256").update(content).digest("hex").slice(0, 12);
  const name = `${stem}-${hash}${ext}`;
  writeFileSync(join(out, name), content);
  return name;
}

// The source map (17 MB) stays out: the published package carries what the page runs, nothing more.
const scalarSource = readFileSync(join(scalarDir, "dist", "browser", "standalone.js"), "utf8").replace(
  /\n\/\/# sourceMappingURL=\S+\s*$/,
  "\n",
);
const manifest = {
  scalar: emit("scalar", ".js", scalarSource),
  init: emit("init", ".js", readFileSync(join(packageDir, "docs-page", "init.js"))),
  style: emit("docs", ".css", readFileSync(join(packageDir, "docs-page", "docs.css"))),
};
writeFileSync(join(out, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`dist/docs: ${Object.values(manifest).join(", ")}`);
