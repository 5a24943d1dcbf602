// Debian's Chromium through playwright-core, a fresh headless profile per launch; installed first where it is missing and the machine allows it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { requirePeer } from "./peers.js";

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM = "/usr/bin/chromium";

// On import, not in launchChromium: an install outlasts any hook's time limit, and loading a test file has none.
await requirePeer({ name: "chromium", binary: CHROMIUM, package: "chromium" });

/** A running browser: its one context, and how to close it (its profile goes too). */
export interface LaunchedChromium {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches Chromium headless on a fresh profile, 1280x900, with nothing that reaches the network by itself. */
export async function launchChromium(): Promise<LaunchedChromium> {
  const profile = await mkdtemp(join(tmpdir(), "otc-browser-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
