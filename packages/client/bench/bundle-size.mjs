// Bundles @otc/client's ESM entry for the browser with esbuild (minified), prints its size and gzipped
// size, the share of each package, and, side by side, what the same answer checks would cost with Ajv
// compiling the schemas at run time (the approach the precompiled validators replace).
// Run after `npm run build`: `npm run bench -w @otc/client`.
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const options = {
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  write: false,
  metafile: true,
  logLevel: "error",
};

async function measure(buildOptions) {
  const result = await build({ ...options, ...buildOptions });
  const code = result.outputFiles[0].contents;
  return { code, gzipped: gzipSync(code, { level: 9 }).length, metafile: result.metafile };
}

const client = await measure({ entryPoints: [new URL("../dist/index.js", import.meta.url).pathname] });
console.log(`@otc/client ESM bundle: ${kb(client.code.length)} minified, ${kb(client.gzipped)} gzipped`);
const byPackage = new Map();
for (const [file, input] of Object.entries(Object.values(client.metafile.outputs)[0].inputs)) {
  const match = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(file);
  const name = match
    ? match[1]
    : /(^|\/)types\/dist\//.test(file)
      ? "@otc/types (validators)"
      : "@otc/client (own code)";
  byPackage.set(name, (byPackage.get(name) ?? 0) + input.bytesInOutput);
}
for (const [name, bytes] of [...byPackage.entries()].sort((a, b) => b[1] - a[1])) {
  console.log(
    `  ${name.padEnd(28)} ${kb(bytes).padStart(10)}  ${((bytes / client.code.length) * 100).toFixed(1).padStart(5)}%`,
  );
}

// The same six checks with Ajv at run time, for comparison.
const withAjv = await measure({
  stdin: {
    resolveDir: new URL("..", import.meta.url).pathname,
    contents: `
      import { Ajv2020 } from "ajv/dist/2020.js";
      import addFormats from "ajv-formats";
      import { allSchemas } from "@otc/types";
      const ajv = new Ajv2020({ schemas: [...allSchemas] });
      addFormats(ajv, ["uri"]);
      export const checks = ["call-tool-response", "call-tool-result-envelope", "tool-list-response",
        "server-error-response", "validation-error-response", "authorization-challenge-check-response"]
        .map((name) => ajv.getSchema("https://otc.dev/schemas/oxp/1.0/" + name + ".json"));`,
  },
});
const validatorsBytes = byPackage.get("@otc/types (validators)") ?? 0;
console.log(
  `answer checks: precompiled ${kb(validatorsBytes)} vs Ajv at run time ${kb(withAjv.code.length)} minified (${kb(withAjv.gzipped)} gzipped): ${(withAjv.code.length / Math.max(1, validatorsBytes)).toFixed(1)}x smaller`,
);
