/** Browser test harness: Debian's Chromium through playwright-core, and the demo Tool Server with the Inspector mounted, on port 0. */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createDemoApp, type DemoOptions } from "@otc/demo/app";
import { listen } from "@otc/server";
import { type BrowserContext, chromium, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** Where the tests write their screenshots (listed in tests/browser/.gitignore). */
export const SCREENSHOTS = fileURLToPath(new URL("../screenshots/", import.meta.url));

/** A running demo server with /inspector and /docs. */
export interface DemoServer {
  url: string;
  close(): Promise<void>;
}

/** The demo as `npm start` serves it (the Inspector at /inspector and /docs), responses checked against the spec. */
export async function startDemo(options: Pick<DemoOptions, "auth" | "cors"> = {}): Promise<DemoServer> {
  const { app } = createDemoApp({ ...options, logger: false, validateResponses: true });
  const running = await listen(app, { port: 0 });
  return { url: running.url, close: running.close };
}

/** A fresh Chromium profile, headless. Fails (never skips) when Chromium is not installed. */
export async function launchBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium not found: install it with \`apt-get install chromium\` (looked for ${CHROMIUM})`);
  }
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
  // Shorter than a test's time limit, so a missing element fails with its locator named.
  context.setDefaultTimeout(8_000);
  await mkdir(SCREENSHOTS, { recursive: true });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Console messages that report a Content-Security-Policy violation, collected for a page. */
export function watchPolicy(page: Page): string[] {
  const violations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  return violations;
}

export async function screenshot(page: Page, name: string, fullPage = true): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage });
}

/** The input of a generated form's field, by its label (rjsf marks required ones with a `*`). */
export const field = (page: Page, name: string) => page.getByLabel(new RegExp(`^${name}\\*?$`));

/** The texts a field's `aria-describedby` points at: where rjsf puts the field's errors. */
export async function description(page: Page, name: string): Promise<string> {
  return field(page, name).evaluate((element) =>
    (element.getAttribute("aria-describedby") ?? "")
      .split(/\s+/)
      .map((id) => document.getElementById(id)?.textContent ?? "")
      .join(" ")
      .trim(),
  );
}

/** A port free right now on 127.0.0.1, for a server whose origin must be known before it starts. */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
