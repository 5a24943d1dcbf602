// Bundles @otc/client's ESM entry for the browser with esbuild (minified) and prints its size, gzipped
// size, and the share of each package in it. Run after `npm run build`: `npm run bench -w @otc/client`.
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const result = await build({
  entryPoints: [new URL("../dist/index.js", import.meta.url).pathname],
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  write: false,
  metafile: true,
  logLevel: "error",
});
const code = result.outputFiles[0].contents;
const gzipped = gzipSync(code, { level: 9 }).length;
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;

const byPackage = new Map();
for (const [file, input] of Object.entries(result.metafile.outputs[Object.keys(result.metafile.outputs)[0]].inputs)) {
  const match = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(file);
  const name = match ? match[1] : "@otc/client (own code)";
  byPackage.set(name, (byPackage.get(name) ?? 0) + input.bytesInOutput);
}
console.log(`@otc/client ESM bundle: ${kb(code.length)} minified, ${kb(gzipped)} gzipped`);
for (const [name, bytes] of [...byPackage.entries()].sort((a, b) => b[1] - a[1])) {
  console.log(
    `  ${name.padEnd(28)} ${kb(bytes).padStart(10)}  ${((bytes / code.length) * 100).toFixed(1).padStart(5)}%`,
  );
}
