/** Vite build of the Inspector page (ui/) into dist/ui; @otc/client and @otc/types are bundled from their sources. */
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig, type PluginOption } from "vite";

const from = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));

export default defineConfig({
  root: from("./ui"),
  // Relative asset URLs: the handler rewrites them to wherever the page is mounted.
  base: "./",
  // plugin-react's types resolve the hoisted vite (another major) from the root; at run time it plugs into this one.
  plugins: [react() as unknown as PluginOption],
  resolve: {
    alias: [
      { find: /^@otc\/client$/, replacement: from("../client/src/index.ts") },
      { find: /^@otc\/types$/, replacement: from("../types/src/index.ts") },
    ],
  },
  build: {
    outDir: from("./dist/ui"),
    emptyOutDir: true,
    sourcemap: false,
    // One entry is fine: the page is the whole app; React, rjsf and Ajv are about 190 KiB gzipped.
    chunkSizeWarningLimit: 800,
    modulePreload: { polyfill: false },
  },
});
