/** `otc inspect` (packages/cli/src/inspect-command.ts): its arguments, the page it serves and opens, and a cross-origin session in Chromium. */

// The CLI does not route `inspect` here yet (the lead wires it into cli.ts): the command is imported as a module.
import { inspectCommand } from "@otc/cli";
import { freePort } from "@otc/test-helpers/free-port";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DemoServer, field, launchBrowser, screenshot, startDemo, watchPolicy } from "./harness.js";

function captureIo() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { stdout: (text: string) => out.push(text), stderr: (text: string) => err.push(text), env: {} },
    stdout: () => out.join(""),
    stderr: () => err.join(""),
  };
}

describe("otc inspect: arguments", () => {
  test.each([
    [[], /needs the server's URL/],
    [["ftp://example.com"], /http:\/\/ or https:\/\//],
    [["127.0.0.1:8080"], /http:\/\/ or https:\/\//],
    [["http://user:pw@127.0.0.1:8080"], /must not carry credentials/],
    [["http://127.0.0.1:8080", "--port", "99999"], /--port must be a port number/],
    [["http://127.0.0.1:8080", "extra"], /unexpected argument extra/],
    [["http://127.0.0.1:8080", "--nope"], /unknown option/i],
    [["http://a;sandbox"], /serverUrl must be/],
  ])("refuses %j with exit code 2", async (argv, message) => {
    const { io, stderr, stdout } = captureIo();
    expect(await inspectCommand(argv, io)).toBe(2);
    expect(stderr()).toMatch(message);
    expect(stdout()).toBe("");
  });

  test("--help prints the usage and the CORS note", async () => {
    const { io, stdout } = captureIo();
    expect(await inspectCommand(["--help"], io)).toBe(0);
    expect(stdout()).toContain("otc inspect <url> [--port N] [--host H] [--no-open]");
    expect(stdout()).toContain("CORS");
  });
});

describe("otc inspect: the page", () => {
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let demo: DemoServer;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    // The demo lets the page's origin call it, as a server must for `otc inspect` (@otc/server's cors option).
    [browser, demo] = await Promise.all([
      launchBrowser(),
      startDemo({ cors: { origins: [`http://127.0.0.1:${port}`] } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([browser?.close(), demo?.close()]);
  });

  test("serves the Inspector pointed at the server, opens it, and stops on its signal", async () => {
    const { io, stdout } = captureIo();
    const stop = new AbortController();
    const opened: string[] = [];
    let listening!: (url: string) => void;
    const ready = new Promise<string>((resolve) => {
      listening = resolve;
    });
    const exit = inspectCommand([demo.url, "--port", String(port)], io, {
      signal: stop.signal,
      openUrl: async (url) => {
        opened.push(url);
      },
      onListening: listening,
    });
    const pageUrl = await ready;
    const origin = new URL(pageUrl).origin;
    expect(origin).toBe(`http://127.0.0.1:${port}`);
    expect(pageUrl).toBe(`${origin}/inspector?url=${encodeURIComponent(demo.url)}`);
    expect(stdout()).toContain(pageUrl);
    expect(stdout()).toContain(`The server must allow the origin ${origin} with CORS`);
    await expect.poll(() => opened).toEqual([pageUrl]);

    const root = await fetch(`${origin}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe(`/inspector?url=${encodeURIComponent(demo.url)}`);
    const html = await fetch(`${origin}/inspector`);
    expect(html.headers.get("content-security-policy")).toContain(`connect-src 'self' ${new URL(demo.url).origin}`);

    const page = await browser.context.newPage();
    const violations = watchPolicy(page);
    // The server allows the page's origin: the page lists and calls its tools across origins.
    await page.goto(pageUrl);
    await page
      .getByRole("status")
      .filter({ hasText: `Connected to ${demo.url}` })
      .waitFor();
    await page.getByRole("button", { name: "Calculator.Add@1.0.0", exact: true }).click();
    await field(page, "a").fill("20");
    await field(page, "b").fill("22");
    await page.getByRole("button", { name: "Call tool" }).click();
    await page.getByRole("region", { name: "Result" }).getByText("Success").waitFor();
    expect(await page.getByLabel("Value").textContent()).toBe("42");
    await screenshot(page, "09-otc-inspect");
    expect(violations).toEqual([]);
    await page.close();

    stop.abort();
    expect(await exit).toBe(0);
    await expect(fetch(`${origin}/inspector`)).rejects.toThrow();
  });

  test("--no-open only prints the URL", async () => {
    const { io, stdout } = captureIo();
    const stop = new AbortController();
    let opened = false;
    const exit = inspectCommand([demo.url, "--port", "0", "--no-open"], io, {
      signal: stop.signal,
      openUrl: async () => {
        opened = true;
      },
      onListening: () => stop.abort(),
    });
    expect(await exit).toBe(0);
    expect(opened).toBe(false);
    expect(stdout()).toMatch(/http:\/\/127\.0\.0\.1:\d+\/inspector\?url=/);
  });
});
