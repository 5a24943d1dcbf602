/** The Inspector's screens for the extensions beyond OXP 1.0 (docs/protocol.md 9), in Chromium: annotations and the confirmation before a destructive call, asynchronous calls with progress and Cancel, a paged catalog with a toolkit filter; and a server without extensions, served as before. */
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { inspector, inspectorPage, readInspectorFiles } from "@otc/inspector";
import { createServer, defineTool, listen, type Tool } from "@otc/server";
import { verifies } from "@otc/test-helpers/verifies";
import type { Page, Request } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { type DemoServer, field, launchBrowser, screenshot, startDemo, watchPolicy } from "./harness.js";

/** Tools of one toolkit, `Toolkit.Item1` to `Toolkit.Item<count>`, with the annotations given (none when undefined). */
function items(toolkit: string, count: number, annotations?: { read_only: boolean }): Tool[] {
  return Array.from({ length: count }, (_, index) =>
    defineTool({
      toolkit,
      name: `Item${index + 1}`,
      version: "1.0.0",
      description: `Item ${index + 1} of ${toolkit}.`,
      inputSchema: {},
      outputSchema: null,
      ...(annotations ? { annotations } : {}),
      run: () => null,
    }),
  );
}

/** What Jobs.Count's runs saw: how each ended. */
const runs: { callId: string; ended: "done" | "aborted" }[] = [];

/** A go-ahead that Jobs.Count's held steps wait for: `given` resolves once the test calls `give`. */
function newGoAhead(): { given: Promise<void>; give: () => void } {
  let give = () => {};
  const given = new Promise<void>((resolve) => {
    give = resolve;
  });
  return { given, give };
}

/** The go-ahead of the counts started from now on: each test that counts takes a new one (see {@link startCount}). */
let goAhead = newGoAhead();

// A count ends with its test, whatever the test let it do: one that failed before its go-ahead leaves none behind.
afterEach(() => {
  goAhead.give();
});

/**
 * Counts to `steps`, reporting each; after its first `free` steps, it waits for the test's go-ahead (the test, not
 * the wall clock, decides how long it runs); stops when its call is cancelled.
 */
const count = defineTool({
  toolkit: "Jobs",
  name: "Count",
  version: "1.0.0",
  description: "Counts slowly, reporting its progress.",
  inputSchema: {
    type: "object",
    properties: {
      steps: { type: "integer", minimum: 1, maximum: 1000, description: "How far to count." },
      free: { type: "integer", minimum: 0, maximum: 1000, description: "Steps counted before it waits for the test." },
    },
    required: ["steps", "free"],
    additionalProperties: false,
  },
  outputSchema: { type: "object", properties: { counted: { type: "integer" } }, required: ["counted"] },
  annotations: { title: "Count slowly", read_only: true, idempotent: true, open_world: false },
  run: async ({ steps, free }, context) => {
    const held = goAhead.given;
    const stopped = new Promise<boolean>((resolve) => {
      if (context.signal.aborted) {
        resolve(true);
      }
      context.signal.addEventListener("abort", () => resolve(true), { once: true });
    });
    for (let step = 1; step <= steps; step++) {
      context.progress({ progress: step, total: steps, message: `Counted to ${step} <b>not bold</b>` });
      if (step >= free && step < steps && (await Promise.race([held.then(() => false), stopped]))) {
        runs.push({ callId: context.callId, ended: "aborted" });
        throw context.signal.reason;
      }
    }
    runs.push({ callId: context.callId, ended: "done" });
    return { counted: steps };
  },
});

/** 70 + 70 + 5 + 1 tools: three pages of 50 for the Inspector. Gamma's tools say nothing of what they do. */
const catalog = [
  ...items("Alpha", 70, { read_only: true }),
  ...items("Beta", 70, { read_only: true }),
  ...items("Gamma", 5),
  count,
];

let browser: Awaited<ReturnType<typeof launchBrowser>>;
let demo: DemoServer;
let many: { url: string; close(): Promise<void> };
let plain: { url: string; close(): Promise<void> };
/** A server of Jobs.Count alone that asks for an API key. */
let locked: { url: string; close(): Promise<void> };

const API_KEY = "extensions-test-key-0b9d41c7";

beforeAll(async () => {
  const pages = [inspectorPage({ files: readInspectorFiles })];
  [browser, demo, many, plain, locked] = await Promise.all([
    launchBrowser(),
    startDemo(),
    listen(createServer({ tools: catalog, logger: false, pages, validateResponses: true }), { port: 0 }),
    listen(createServer({ tools: catalog, logger: false, pages, extensions: false }), { port: 0 }),
    listen(createServer({ tools: [count], logger: false, pages, auth: { apiKeys: [API_KEY] } }), { port: 0 }),
  ]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), demo?.close(), many?.close(), plain?.close(), locked?.close()]);
});

/** A new tab on the Inspector of the server at `url`, once it is connected. */
async function inspect(url: string): Promise<{ page: Page; violations: string[]; requests: Request[] }> {
  const page = await browser.context.newPage();
  const violations = watchPolicy(page);
  const requests: Request[] = [];
  page.on("request", (request) => {
    requests.push(request);
  });
  await page.goto(`${url}/inspector`);
  await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
  return { page, violations, requests };
}

const nav = (page: Page) => page.getByRole("navigation", { name: "Tools" });
const result = (page: Page) => page.getByRole("region", { name: "Result" });
const catalogStatus = (page: Page) => page.getByRole("status", { name: "Catalog status" });
const toolsRequests = (requests: Request[]) =>
  requests.filter((request) => new URL(request.url()).pathname === "/tools");
const calls = (requests: Request[]) => requests.filter((request) => request.url().endsWith("/tools/call"));

async function choose(page: Page, toolId: string) {
  await nav(page).getByRole("button", { name: toolId, exact: true }).click();
  await page
    .getByRole("heading", { name: toolId.split("@")[0] })
    .first()
    .waitFor();
}

describe("annotations", () => {
  test("shows each tool's title, hints and deprecation, in the list and the definition", async () => {
    const { page, violations, requests } = await inspect(demo.url);
    expect(await page.getByRole("status").filter({ hasText: "Connected to" }).textContent()).toContain(
      "extensions: annotations, tasks, pagination",
    );
    // Asked for, as the discovery document lists it.
    expect(toolsRequests(requests)[0]?.headers()["oxp-extensions"]).toBe("annotations, pagination");
    const sms = nav(page).getByRole("button", { name: "SMS.Send@0.1.2", exact: true });
    expect(await sms.textContent()).toContain("destructive");
    expect(await sms.getAttribute("title")).toMatch(/^Send an SMS: /);
    expect(await nav(page).getByRole("button", { name: "Calculator.Add@1.0.0" }).textContent()).toContain("read-only");
    expect(await nav(page).getByRole("button", { name: "Greeting.Hello@1.0.0" }).textContent()).toContain("deprecated");
    expect(await nav(page).getByRole("button", { name: "Greeting.Hello@2.0.0" }).textContent()).not.toContain(
      "deprecated",
    );
    // Doorbell rings (not read-only) but erases nothing: neither mark.
    expect(await nav(page).getByRole("button", { name: "Doorbell.Ring@0.1.0" }).textContent()).toBe("Ring0.1.0");

    await choose(page, "Greeting.Hello@1.0.0");
    expect(await page.getByRole("note", { name: "Deprecation" }).textContent()).toMatch(
      /^Deprecated: Use Greeting.Hello@2.0.0/,
    );
    await choose(page, "SMS.Send@0.1.2");
    const hints = page.getByRole("region", { name: "Annotations" });
    const pairs = async () => {
      const terms = await hints.getByRole("term").allTextContents();
      const values = await hints.getByRole("definition").allTextContents();
      return Object.fromEntries(terms.map((term, index) => [term, values[index]]));
    };
    expect(await pairs()).toEqual({
      Title: "Send an SMS",
      "Read-only": "no",
      Destructive: "yes",
      Idempotent: "no",
      "Open world": "yes",
    });
    await choose(page, "Calculator.Add@1.0.0");
    expect(await pairs()).toMatchObject({ "Read-only": "yes", Destructive: "no: read-only" });
    expect(await page.locator(".definition .tool-title").textContent()).toBe("Add two numbers");
    await screenshot(page, "12-annotations");
    expect(violations).toEqual([]);
    await page.close();
  });

  test("asks before calling a destructive tool, and sends nothing until the user says so", async () => {
    const { page, violations, requests } = await inspect(demo.url);
    await choose(page, "SMS.Send@0.1.2");
    await page.getByLabel("Secret TWILIO_API_KEY").fill("twilio-secret");
    await field(page, "to").fill("+15550100");
    await field(page, "message").fill("hi");
    await page.getByRole("button", { name: "Call tool" }).click();
    const confirm = page.getByRole("alertdialog", { name: "Call Send an SMS?" });
    await confirm.waitFor();
    expect(await confirm.textContent()).toContain("The server says this tool is destructive");
    await screenshot(page, "13-confirm-destructive");
    // The safe answer has the focus; the call button waits for the answer.
    expect(
      await confirm.getByRole("button", { name: "Don't call" }).evaluate((el) => el === document.activeElement),
    ).toBe(true);
    expect(await page.getByRole("button", { name: "Call tool" }).isDisabled()).toBe(true);
    await confirm.getByRole("button", { name: "Don't call" }).click();
    await confirm.waitFor({ state: "detached" });
    expect(calls(requests)).toEqual([]);

    await page.getByRole("button", { name: "Call tool" }).click();
    await confirm.getByRole("button", { name: "Call it" }).click();
    await result(page).getByText("Success").waitFor();
    expect(calls(requests)).toHaveLength(1);

    // A read-only tool is called at once.
    await choose(page, "Calculator.Add@1.0.0");
    await field(page, "a").fill("1");
    await field(page, "b").fill("2");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("Success").waitFor();
    expect(await page.getByRole("alertdialog").count()).toBe(0);
    expect(violations).toEqual([]);
    await page.close();
  });

  // The client's side of the rule: an absent hint takes its default.
  verifies(
    "annotations.meaning",
    "asks before calling a tool that says nothing of what it does (destructive by default)",
    async () => {
      const { page, requests } = await inspect(many.url);
      await page.getByLabel("Toolkit", { exact: true }).fill("Gamma");
      await page.getByRole("button", { name: "Filter" }).click();
      await choose(page, "Gamma.Item1@1.0.0");
      expect(await page.getByRole("region", { name: "Annotations" }).textContent()).toContain(
        "Destructiveyes (default)",
      );
      await page.getByRole("button", { name: "Call tool" }).click();
      const confirm = page.getByRole("alertdialog", { name: "Call Gamma.Item1@1.0.0?" });
      expect(await confirm.textContent()).toContain("The server does not say this tool is read-only");
      await confirm.getByRole("button", { name: "Call it" }).click();
      await result(page).getByText("Success").waitFor();
      expect(calls(requests)).toHaveLength(1);
      await page.close();
    },
  );
});

describe("asynchronous calls", () => {
  /** Calls Jobs.Count from the page: `free` steps, then it waits for the go-ahead this returns. */
  async function startCount(page: Page, steps: number, free: number): Promise<() => void> {
    goAhead = newGoAhead();
    const { give } = goAhead;
    await page.getByLabel("Toolkit", { exact: true }).fill("Jobs");
    await page.getByRole("button", { name: "Filter" }).click();
    await choose(page, "Jobs.Count@1.0.0");
    await page.getByLabel("Run asynchronously").check();
    await field(page, "steps").fill(String(steps));
    await field(page, "free").fill(String(free));
    await page.getByRole("button", { name: "Call tool" }).click();
    return give;
  }

  const bar = (page: Page) => result(page).getByRole("progressbar", { name: "Progress" });
  const barValue = async (page: Page) => Number(await bar(page).evaluate((el) => (el as HTMLProgressElement).value));

  test("shows the progress from the event stream, then the result", async () => {
    const { page, violations, requests } = await inspect(many.url);
    // Two steps, then it waits until the page has been seen running.
    const goOn = await startCount(page, 12, 2);
    const status = result(page).getByRole("status", { name: "Call status" });
    await status.getByText("Running").waitFor();
    await result(page).getByText("following its event stream").waitFor();
    await page.waitForFunction(() => Number(document.querySelector("progress")?.value) >= 2);
    expect(await bar(page).getAttribute("max")).toBe("12");
    // The tool's message is text, markup included, never HTML.
    await result(page)
      .getByText(/of 12 · Counted to \d+ <b>not bold<\/b>/)
      .waitFor();
    expect(await result(page).locator("b").count()).toBe(0);
    await screenshot(page, "14-async-progress");
    goOn();
    await status.getByText("Completed").waitFor();
    await result(page).getByText("Success").waitFor();
    expect(JSON.parse((await result(page).getByLabel("Value").textContent()) ?? "")).toEqual({ counted: 12 });
    expect(await barValue(page)).toBeGreaterThanOrEqual(11);

    const post = calls(requests)[0];
    expect(post?.headers()).toMatchObject({ "oxp-extensions": "tasks", prefer: "respond-async" });
    const stream = requests.find((request) => request.url().endsWith("/events"));
    expect(stream?.headers()).toMatchObject({ "oxp-extensions": "tasks", accept: "text/event-stream" });
    // The history has the POST's 202 and the stream, with its events.
    const history = page.getByRole("list", { name: "Calls" });
    await history.getByText("asynchronous: success").click();
    const responses = await history.getByLabel("Raw response").allTextContents();
    expect(responses[0]).toMatch(/^HTTP 202\n/);
    expect(responses[1]).toMatch(/^HTTP 200\n[\s\S]*event: progress[\s\S]*event: result/);
    expect(violations).toEqual([]);
    await page.close();
  });

  verifies("tasks.cancel", "cancels a running call with DELETE, and shows it ended cancelled", async () => {
    const { page, violations, requests } = await inspect(many.url);
    // One step, then it waits for a go-ahead it never gets: it runs until cancelled.
    await startCount(page, 200, 1);
    await page.waitForFunction(() => Number(document.querySelector("progress")?.value) >= 1);
    const callId = (await result(page).locator(".meta code").first().textContent()) ?? "";
    await result(page).getByRole("button", { name: "Cancel" }).click();
    await result(page).getByRole("status", { name: "Call status" }).getByText("Cancelled").waitFor();
    await result(page).getByText("The tool failed: The call was cancelled").waitFor();
    expect(await result(page).getByRole("button", { name: "Cancel" }).count()).toBe(0);
    await screenshot(page, "15-async-cancelled");
    const deletes = requests.filter((request) => request.method() === "DELETE");
    expect(deletes.map((request) => new URL(request.url()).pathname)).toEqual([`/tools/calls/${callId}`]);
    expect(runs).toContainEqual({ callId, ended: "aborted" });
    await page.getByRole("list", { name: "Calls" }).getByText("asynchronous: cancelled").waitFor();
    expect(violations).toEqual([]);
    await page.close();
  });

  test("falls back to long polling when the event stream cannot be opened", async () => {
    const { page, requests } = await inspect(many.url);
    await page.route("**/tools/calls/*/events", (route) => route.abort());
    // It runs until the page has gone over to polling.
    const goOn = await startCount(page, 10, 1);
    await result(page).getByText("polling its status").waitFor();
    goOn();
    await result(page).getByRole("status", { name: "Call status" }).getByText("Completed").waitFor();
    await result(page).getByText("Success").waitFor();
    const polls = requests.filter((request) => /\/tools\/calls\/[^/]+$/.test(request.url()));
    expect(polls.length).toBeGreaterThanOrEqual(1);
    expect(polls[0]?.headers()).toMatchObject({ prefer: "wait=10", "oxp-extensions": "tasks" });
    await page.close();
  });

  test("sends the server's API key with every request of the call, masked in the history", async () => {
    const page = await browser.context.newPage();
    const violations = watchPolicy(page);
    const requests: Request[] = [];
    page.on("request", (request) => {
      requests.push(request);
    });
    await page.goto(`${locked.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByRole("button", { name: "Connect" }).click();
    await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
    // A count of three that waits after its first step until the page has been seen running.
    const goOn = await startCount(page, 3, 1);
    await result(page).getByRole("status", { name: "Call status" }).getByText("Running").waitFor();
    goOn();
    await result(page).getByText("Success").waitFor();
    expect(JSON.parse((await result(page).getByLabel("Value").textContent()) ?? "")).toEqual({ counted: 3 });

    // The POST, the event stream and the status the stream's result is checked against: each with the key.
    const tasks = requests.filter((request) => request.headers()["oxp-extensions"] === "tasks");
    expect(tasks.map((request) => request.method())).toEqual(["POST", "GET", "GET"]);
    for (const request of tasks) {
      expect(request.headers()["oxp-api-key"]).toBe(API_KEY);
      expect(new URL(request.url()).origin).toBe(locked.url);
    }
    const history = page.getByRole("list", { name: "Calls" });
    await history.getByText("Jobs.Count@1.0.0", { exact: true }).click();
    const raw = (await history.getByLabel("Raw request").allTextContents()).join("\n");
    expect(raw).toMatch(/^GET .*\/events\n[\s\S]*oxp-api-key: ••••••/m);
    expect(raw).not.toContain(API_KEY);
    expect(await page.content()).not.toContain(API_KEY);
    expect(violations).toEqual([]);
    await page.close();
  });

  test("shows a 422 of an asynchronous call as for any call, with no task", async () => {
    const { page } = await inspect(many.url);
    await startCount(page, 0, 0);
    await result(page).getByText("422").waitFor();
    expect(await result(page).getByRole("region", { name: "Asynchronous call" }).count()).toBe(0);
    await page.close();
  });
});

describe("a large catalog", () => {
  test("loads it page by page on demand, and filters it by toolkit on the server", async () => {
    const { page, violations, requests } = await inspect(many.url);
    const buttons = nav(page).getByRole("button");
    expect(await buttons.count()).toBe(50);
    expect(await catalogStatus(page).textContent()).toBe("50 tools loaded; the server has more");
    expect(await page.getByRole("status").filter({ hasText: "Connected to" }).textContent()).toContain(
      "50 tools loaded so far",
    );
    const more = page.getByRole("button", { name: "Load more tools" });
    await more.click();
    await catalogStatus(page).getByText("100 tools loaded").waitFor();
    await more.click();
    await catalogStatus(page).getByText("146 tools", { exact: true }).waitFor();
    expect(await more.count()).toBe(0);
    expect(await buttons.count()).toBe(146);
    const pages = toolsRequests(requests).map((request) => new URL(request.url()).searchParams);
    expect(pages.map((query) => query.get("limit"))).toEqual(["50", "50", "50"]);
    expect(pages[0]?.has("cursor")).toBe(false);
    expect(pages[1]?.get("cursor")).toBeTruthy();

    await page.getByLabel("Toolkit", { exact: true }).fill("Beta");
    await page.getByRole("button", { name: "Filter" }).click();
    await catalogStatus(page).getByText("50 tools of toolkit Beta loaded; the server has more").waitFor();
    expect(new Set(await nav(page).getByRole("heading").allTextContents())).toEqual(new Set(["Beta"]));
    await screenshot(page, "16-paged-toolkit");
    await more.click();
    await catalogStatus(page).getByText("70 tools of toolkit Beta", { exact: true }).waitFor();
    expect(await more.count()).toBe(0);
    const filtered = toolsRequests(requests)
      .slice(3)
      .map((request) => new URL(request.url()).searchParams.get("toolkit"));
    expect(filtered).toEqual(["Beta", "Beta"]);

    // The server offers search: the box asks it (Enter at once), within the toolkit filtered on, best first.
    await nav(page).getByRole("searchbox").fill("Item7");
    await nav(page).getByRole("searchbox").press("Enter");
    await page
      .getByRole("status", { name: "Search status" })
      .getByText(/best first/)
      .waitFor();
    const searched = toolsRequests(requests).at(-1)?.url() ?? "";
    expect(Object.fromEntries(new URL(searched).searchParams)).toEqual({
      q: "Item7",
      view: "summary",
      limit: "20",
      toolkit: "Beta",
    });
    const found = nav(page).getByRole("list", { name: "Search results" }).getByRole("button");
    expect((await found.allTextContents()).slice(0, 2)).toEqual(["Item7read-only1.0.0", "Item70read-only1.0.0"]);
    await nav(page).getByRole("searchbox").fill("");
    await catalogStatus(page).getByText("70 tools of toolkit Beta", { exact: true }).waitFor();
    expect(await buttons.count()).toBe(70);

    // A name no toolkit can have: the server's 400, and a way back.
    await page.getByLabel("Toolkit", { exact: true }).fill("no such toolkit");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("alert").filter({ hasText: "Could not list the tools" }).waitFor();
    await page.getByRole("button", { name: "All toolkits" }).click();
    await catalogStatus(page).getByText("50 tools loaded; the server has more").waitFor();
    expect(violations).toEqual([]);
    await page.close();
  });
});

describe("a server without extensions", () => {
  test("is listed whole and called as OXP 1.0 knows it: no annotations, no confirmation, no asynchronous option", async () => {
    const { page, requests } = await inspect(plain.url);
    expect(await nav(page).getByRole("button").count()).toBe(146);
    expect(await page.getByRole("status").filter({ hasText: "Connected to" }).textContent()).toMatch(/: 146 tools$/);
    expect(toolsRequests(requests).map((request) => [request.url(), request.headers()["oxp-extensions"]])).toEqual([
      [`${plain.url}/tools`, undefined],
    ]);
    expect(await page.getByRole("button", { name: "Load more tools" }).count()).toBe(0);
    await choose(page, "Gamma.Item2@1.0.0");
    expect(await page.getByRole("region", { name: "Annotations" }).count()).toBe(0);
    expect(await page.getByLabel("Run asynchronously").count()).toBe(0);
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("Success").waitFor();
    expect(await page.getByRole("alertdialog").count()).toBe(0);
    // The toolkit filter works on the whole list, in the page.
    await page.getByLabel("Toolkit", { exact: true }).fill("Gamma");
    await page.getByRole("button", { name: "Filter" }).click();
    await catalogStatus(page).getByText("5 tools of toolkit Gamma", { exact: true }).waitFor();
    await page.close();
  });

  test("from a page on another origin, uses the extensions the server's CORS policy lets it ask for", async () => {
    const handler = inspector();
    const pageServer: Server = createHttpServer((req, res) => handler(req, res));
    await new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
    const app = createServer({ tools: catalog, logger: false, cors: { origins: [origin] } });
    // An older server's policy in front of the same app: its preflight names only the OXP 1.0 request headers.
    const older: Server = createHttpServer((req, res) => {
      if (req.method === "OPTIONS" && /oxp-extensions/i.test(String(req.headers["access-control-request-headers"]))) {
        res.writeHead(204, {
          "Access-Control-Allow-Origin": origin,
          "Access-Control-Allow-Methods": "GET, HEAD, POST",
          "Access-Control-Allow-Headers": "Content-Type, OXP-Version, OXP-API-Key, Authorization",
          Vary: "Origin",
        });
        res.end();
        return;
      }
      app(req, res);
    });
    await new Promise<void>((resolve) => older.listen(0, "127.0.0.1", resolve));
    const olderUrl = `http://127.0.0.1:${(older.address() as AddressInfo).port}`;
    const tools = await listen(app, { port: 0 });
    try {
      // Today's server lets the page ask: the list comes in pages (50 of 146 first), with its annotations.
      const page = await browser.context.newPage();
      await page.goto(`${origin}/inspector?url=${encodeURIComponent(tools.url)}`);
      await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
      await page.getByRole("button", { name: "Load more tools" }).waitFor();
      expect(await page.getByText("its CORS policy does not let this page ask for them").count()).toBe(0);
      await page.close();
      // The older policy refuses the header: the page says so and lists the tools as OXP 1.0, whole.
      const before = await browser.context.newPage();
      await before.goto(`${origin}/inspector?url=${encodeURIComponent(olderUrl)}`);
      await before.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
      await before.getByText("its CORS policy does not let this page ask for them").waitFor();
      expect(await nav(before).getByRole("button").count()).toBe(146);
      await before.close();
    } finally {
      await Promise.all([
        tools.close(),
        new Promise((resolve) => pageServer.close(resolve)),
        new Promise((resolve) => older.close(resolve)),
      ]);
    }
  });
});
