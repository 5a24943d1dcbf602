/** Browser test harness: Chromium (@otc/test-helpers's) with this suite's time limit and screenshots, the page helpers, and the demo Tool Server with the Inspector mounted, on port 0. */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createDemoApp, type DemoOptions } from "@otc/demo/app";
import { listen } from "@otc/server";
import { type LaunchedChromium, launchChromium } from "@otc/test-helpers/chromium";
import type { Page } from "playwright-core";

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

/** A fresh Chromium profile, headless (installed first where the machine allows it; else a failure naming the command to run). */
export async function launchBrowser(): Promise<LaunchedChromium> {
  const browser = await launchChromium();
  // real time: shorter than the gate's 300 s guard, so that a missing element fails with its locator named; long
  // enough for a page on a busy machine (Playwright's own default is 30 s).
  browser.context.setDefaultTimeout(120_000);
  await mkdir(SCREENSHOTS, { recursive: true });
  return browser;
}

/** Console messages that report a Content-Security-Policy violation, collected for a page. */
export function watchPolicy(page: Page): string[] {
  const violations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) {
      violations.push(message.text());
    }
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
