/** The demo's OAuth flow end to end in Chromium: the demo's sign-in through Example Accounts, otc login, a connection started by a tool call's challenge and finished in the signed-in browser, then Example.Profile. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loginCommand, run } from "@otc/cli";
import { createDemoApp, createExampleAccounts, type ExampleAccounts } from "@otc/demo/app";
import { listen } from "@otc/server";
import { freePort } from "@otc/test-helpers/free-port";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchBrowser, screenshot } from "./harness.js";

let browser: Awaited<ReturnType<typeof launchBrowser>>;
let demo: { url: string; close(): Promise<void> };
let accounts: ExampleAccounts;
let configDir: string;

beforeAll(async () => {
  // Example Accounts' issuer is the demo's public URL: the port is chosen before the demo listens on it.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  accounts = await createExampleAccounts({ publicUrl: url });
  const { app } = createDemoApp({ accounts, logger: false, validateResponses: true });
  [browser, demo, configDir] = await Promise.all([
    launchBrowser(),
    listen(app, { port }),
    mkdtemp(join(tmpdir(), "otc-oauth-flow-")),
  ]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), demo?.close(), configDir && rm(configDir, { recursive: true, force: true })]);
});

/** The otc command in process, with its credentials in this suite's own folder. */
function otc() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: (text: string) => out.push(text),
      stderr: (text: string) => err.push(text),
      env: { OTC_CONFIG_DIR: configDir },
    },
    stdout: () => out.join(""),
    stderr: () => err.join(""),
  };
}

/** On an Example Accounts page: signs in when it asks, then allows what the consent page asks for. */
async function consent(page: Page): Promise<void> {
  await page.locator("#submit").waitFor();
  if ((await page.locator("#login").count()) > 0) {
    await page.locator("#login").fill(accounts.user.id);
    await page.locator("#password").fill(accounts.user.password);
    await page.locator("#submit").click();
    await page.getByRole("heading", { name: /^Allow access/ }).waitFor();
  }
  await page.locator("#scopes").waitFor();
  await page.locator("#submit").click();
}

describe("the demo's authorization code flows in Chromium", () => {
  test("sign in, otc login, connect Example Accounts from a challenge, call Example.Profile", async () => {
    const page = await browser.context.newPage();

    // 1. The demo's own sign-in, through Example Accounts' login and consent pages.
    await page.goto(`${demo.url}/demo/signin`);
    await page.locator("#login").waitFor();
    expect(await page.locator("#client").textContent()).toBe("demo-signin");
    await screenshot(page, "oauth-flow-login");
    await consent(page);
    await page.locator("#user").waitFor();
    expect(await page.locator("#user").textContent()).toBe("demo");
    const cookies = await browser.context.cookies(demo.url);
    expect(cookies.find((cookie) => cookie.name === "demo_session")).toMatchObject({ httpOnly: true, sameSite: "Lax" });

    // 2. otc login: otc registers itself, and the browser (signed in at Example Accounts already) consents.
    const login = otc();
    let opened: (url: string) => void = () => {};
    const authorizationUrl = new Promise<string>((resolve) => {
      opened = resolve;
    });
    const signedIn = loginCommand([demo.url, "--timeout-seconds", "120"], login.io, {
      openUrl: async (url) => opened(url),
    });
    await page.goto(await authorizationUrl);
    await consent(page);
    await page.getByText(`Signed in to ${demo.url}`).waitFor();
    expect(await signedIn, login.stderr()).toBe(0);
    expect(login.stdout()).toContain(`Signed in to ${demo.url} at ${demo.url}/accounts`);

    // 3. The first call has no connection: its challenge's link is Example Accounts' consent for the vault.
    const first = otc();
    expect(await run(["call", "Example.Profile", "--url", demo.url], first.io)).not.toBe(0);
    const link = /Open this URL to continue:\s+(\S+)/.exec(first.stderr())?.[1];
    expect(link, first.stderr()).toMatch(new RegExp(`^${demo.url}/accounts/auth\\?`));

    // 4. Chromium consents and comes back to the demo's callback, where its session shows it is the flow's user.
    await page.goto(link as string);
    await consent(page);
    await page.waitForURL(new RegExp(`^${demo.url}/connections/callback`));
    await page.getByRole("heading", { name: "Example Accounts is connected" }).waitFor();
    await screenshot(page, "oauth-flow-connected");

    // 5. The same call now runs with the token the vault holds.
    const second = otc();
    expect(await run(["call", "Example.Profile", "--url", demo.url], second.io), second.stderr()).toBe(0);
    expect(second.stdout()).toContain('"sub": "demo"');
  });
});
