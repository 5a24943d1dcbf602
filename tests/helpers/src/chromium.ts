// Debian's Chromium through playwright-core, a fresh headless profile per launch; npm test provisions it before the suites run.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { CHROMIUM as CHROMIUM_PEER, checkPeer } from "./peers.js";

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM = CHROMIUM_PEER.binary;

// On import: a suite without its peer fails at once, naming the command that provisions it.
checkPeer(CHROMIUM_PEER);

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
