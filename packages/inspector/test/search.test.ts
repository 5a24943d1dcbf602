/** The tool list's search box in Chromium (docs/protocol.md 9.5): the server's ranked matches, a match loaded with ids= and called, pages by next_cursor, the server's 400 as text, descriptions as text; and a server without search, filtered in the page. */
import { createClient } from "@otc/client";
import { createServer, defineTool, listen, type Tool } from "@otc/server";
import { type LaunchedChromium, launchChromium } from "@otc/test-helpers/chromium";
import type { ToolAnnotations } from "@otc/types";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { inspectorPage, readInspectorFiles } from "../src/index.js";

type Page = Awaited<ReturnType<LaunchedChromium["context"]["newPage"]>>;

/** A description a hostile server could send: markup that would run if the page wrote it as HTML. */
const HOSTILE = `<img src="x" onerror="window.__injected = true"><b>Saves</b> a note.`;

/** A tool of `toolkit` that takes `to`; `result` makes its answer, `annotations` replaces its hints. */
function tool(
  toolkit: string,
  name: string,
  description: string,
  options: { annotations?: ToolAnnotations; result?: (to: string) => string } = {},
): Tool {
  const result = options.result ?? ((to: string) => `done for ${to}`);
  return defineTool({
    toolkit,
    name,
    version: "1.0.0",
    description,
    inputSchema: {
      type: "object",
      properties: { to: { type: "string", description: "Who gets it." } },
      additionalProperties: false,
    },
    outputSchema: { type: "string" },
    annotations: options.annotations ?? { read_only: false, destructive: false },
    run: (input) => result(String((input as { to?: unknown }).to)),
  });
}

/** 4 tools of their own and 25 that all match "widget": two pages of the Inspector's 20 matches. */
const catalog: Tool[] = [
  tool("Mail", "SendEmail", "Sends an email message to one recipient.", { result: (to) => `sent to ${to}` }),
  tool("Mail", "ListEmails", "Lists the messages in the inbox.", { annotations: { read_only: true } }),
  tool("Calendar", "CreateEvent", "Adds an event to the calendar."),
  tool("Notes", "Save", HOSTILE),
  ...Array.from({ length: 25 }, (_, index) => tool("Bulk", `Widget${index + 1}`, `Turns widget number ${index + 1}.`)),
];

interface Running {
  url: string;
  close(): Promise<void>;
}

let browser: LaunchedChromium;
let searching: Running;
/** The same catalog on a server with every extension but search. */
let plain: Running;

beforeAll(async () => {
  const pages = [inspectorPage({ files: readInspectorFiles })];
  [browser, searching, plain] = await Promise.all([
    launchChromium(),
    listen(createServer({ tools: catalog, logger: false, pages, validateResponses: true }), { port: 0 }),
    listen(createServer({ tools: catalog, logger: false, pages, extensions: ["annotations", "tasks", "pagination"] }), {
      port: 0,
    }),
  ]);
  // real time: a guard against a hang only, longer than a page needs on a busy machine.
  browser.context.setDefaultTimeout(120_000);
});

afterAll(async () => {
  await Promise.all([browser?.close(), searching?.close(), plain?.close()]);
});

/** What the page sent to `GET /tools`: the query and the OXP-Extensions header of each request. */
interface ToolsRequest {
  query: URLSearchParams;
  extensions: string | undefined;
}

/** A new tab on the Inspector of the server at `url`, once it is connected, with what it sends and what fails in it. */
async function inspect(url: string): Promise<{ page: Page; tools: ToolsRequest[]; errors: Error[] }> {
  const page = await browser.context.newPage();
  const tools: ToolsRequest[] = [];
  const errors: Error[] = [];
  page.on("request", (request) => {
    const address = new URL(request.url());
    if (address.pathname === "/tools") {
      tools.push({ query: address.searchParams, extensions: request.headers()["oxp-extensions"] });
    }
  });
  page.on("pageerror", (error) => errors.push(error));
  await page.goto(`${url}/inspector`);
  await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
  return { page, tools, errors };
}

const nav = (page: Page) => page.getByRole("navigation", { name: "Tools" });
const box = (page: Page) => nav(page).getByRole("searchbox", { name: "Search tools" });
const results = (page: Page) => nav(page).getByRole("list", { name: "Search results" });
const searchStatus = (page: Page) => page.getByRole("status", { name: "Search status" });
const searches = (tools: ToolsRequest[]) => tools.filter((request) => request.query.has("q"));

/** Types `query` and presses Enter, which asks at once (the debounce's pause is not waited for), then waits for the answer. */
async function search(page: Page, query: string, answered: string | RegExp) {
  await box(page).fill(query);
  await box(page).press("Enter");
  await searchStatus(page).getByText(answered).waitFor();
}

describe("a server that offers search", () => {
  test("asks it for summaries and shows its ranked matches, each with its toolkit and score", async () => {
    const { page, tools, errors } = await inspect(searching.url);
    expect(await page.getByRole("status").filter({ hasText: "Connected to" }).textContent()).toContain("search");
    const listed = await nav(page).getByRole("button").count();
    expect(listed).toBe(catalog.length);

    await search(page, "send an email", /match(es)? for “send an email”, best first$/);
    const expected = await createClient({ baseUrl: searching.url }).searchTools("send an email", {
      view: "summary",
      limit: 20,
    });
    const shown = results(page).getByRole("listitem");
    expect(await shown.count()).toBe(expected.items.length);
    // The server's order, not the list's: the best match first.
    expect(
      await results(page)
        .getByRole("button")
        .evaluateAll((buttons) => buttons.map((b) => b.ariaLabel)),
    ).toEqual(expected.items.map((match) => match.id));
    const best = expected.items[0];
    expect(best?.id).toBe("Mail.SendEmail@1.0.0");
    expect(await shown.first().textContent()).toBe(
      `SendEmail1.0.0Mail · score ${best?.score.toFixed(2)}Sends an email message to one recipient.`,
    );
    // The full list gave way to the matches.
    expect(await nav(page).getByRole("region", { name: "Toolkit Bulk" }).count()).toBe(0);

    const asked = searches(tools);
    expect(asked).toHaveLength(1);
    expect(Object.fromEntries(asked[0]?.query ?? [])).toEqual({ q: "send an email", view: "summary", limit: "20" });
    expect(asked[0]?.extensions).toBe("search");

    // Enter again on the same query sends nothing: the answer is on the page.
    await box(page).press("Enter");
    await search(page, "calendar", /match(es)? for “calendar”/);
    expect(searches(tools).map((request) => request.query.get("q"))).toEqual(["send an email", "calendar"]);

    // An empty box is the full list again.
    await box(page).fill("");
    await nav(page).getByRole("region", { name: "Toolkit Bulk" }).waitFor();
    expect(await nav(page).getByRole("button").count()).toBe(listed);
    expect(await results(page).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });

  test("loads a picked match's definition with ids= before showing its form, and calls it", async () => {
    const { page, tools, errors } = await inspect(searching.url);
    await search(page, "send an email", /best first/);
    const before = tools.length;
    await results(page).getByRole("button", { name: "Mail.SendEmail@1.0.0", exact: true }).click();
    await page.getByRole("heading", { name: "Mail.SendEmail" }).waitFor();
    const loads = tools.slice(before);
    expect(loads.map((request) => [request.query.get("ids"), request.extensions])).toEqual([
      ["Mail.SendEmail@1.0.0", "annotations, search"],
    ]);
    // The form comes from the loaded input schema: the summary had none.
    const to = page.getByLabel(/^to\*?$/);
    await to.fill("ann@example.com");
    await page.getByRole("button", { name: "Call tool" }).click();
    await page.getByRole("region", { name: "Result" }).getByText("sent to ann@example.com").waitFor();
    expect(errors).toEqual([]);
    await page.close();
  });

  test("pages through the matches with next_cursor, and keeps to the toolkit filter", async () => {
    const { page, tools } = await inspect(searching.url);
    await search(page, "widget", "20 matches for “widget”, best first; the server has more");
    const more = page.getByRole("button", { name: "More results" });
    // The catalog's own "Load more tools" is not the search's.
    expect(await page.getByRole("button", { name: "Load more tools" }).count()).toBe(0);
    await more.click();
    await searchStatus(page).getByText("25 matches for “widget”, best first", { exact: true }).waitFor();
    expect(await more.count()).toBe(0);
    const ids = await results(page)
      .getByRole("button")
      .evaluateAll((buttons) => buttons.map((b) => b.ariaLabel));
    expect(new Set(ids).size).toBe(25);
    const [first, second] = searches(tools);
    expect(first?.query.has("cursor")).toBe(false);
    expect(second?.query.get("cursor")).toBeTruthy();
    expect(second?.query.get("q")).toBe("widget");

    // A toolkit filter asks the search again, of that toolkit.
    await page.getByLabel("Toolkit", { exact: true }).fill("Mail");
    await page.getByRole("button", { name: "Filter" }).click();
    await searchStatus(page).getByText("No tool matches “widget”.").waitFor();
    expect(searches(tools).at(-1)?.query.get("toolkit")).toBe("Mail");
    // And a new query too.
    await search(page, "inbox", /match(es)? for “inbox”/);
    expect(Object.fromEntries(searches(tools).at(-1)?.query ?? [])).toMatchObject({ q: "inbox", toolkit: "Mail" });
    await page.close();
  });

  test("keeps the list in sight until the server answers, then shows the answer in its place", async () => {
    const { page } = await inspect(searching.url);
    // The search's answer is held until the test lets it through: the page is seen while it waits.
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route(
      (address) => address.searchParams.has("q"),
      async (route) => {
        await released;
        await route.continue();
      },
    );
    await box(page).fill("INBOX");
    await box(page).press("Enter");
    await searchStatus(page).getByText("Searching the server for “INBOX”…").waitFor();
    expect(await nav(page).getByRole("button").count()).toBe(catalog.length);
    release();
    await searchStatus(page).getByText("1 match for “INBOX”, best first").waitFor();
    expect(
      await nav(page)
        .getByRole("button")
        .evaluateAll((all) => all.map((b) => b.ariaLabel)),
    ).toEqual(["Mail.ListEmails@1.0.0"]);
    await page.close();
  });

  test("shows the server's 400 as text in the page, and searches again", async () => {
    const { page, errors } = await inspect(searching.url);
    await box(page).fill("x".repeat(300));
    await box(page).press("Enter");
    const alert = nav(page).getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toBe(
      "The search failed: The query must be 1 to 256 characters (q has 300 characters.)",
    );
    await search(page, "inbox", /match(es)? for “inbox”/);
    expect(await alert.count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });

  test("shows a description with markup as text", async () => {
    const { page } = await inspect(searching.url);
    await search(page, "note", /match(es)? for “note”/);
    const match = results(page).getByRole("listitem").filter({ hasText: "Notes" });
    expect(await match.locator(".match-description").textContent()).toBe(HOSTILE);
    expect(await nav(page).locator("img, b").count()).toBe(0);
    await results(page).getByRole("button", { name: "Notes.Save@1.0.0" }).click();
    await page.getByRole("heading", { name: "Notes.Save" }).waitFor();
    expect(await page.getByRole("main").getByText(HOSTILE, { exact: true }).count()).toBe(1);
    expect(await page.locator("main img, main b").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __injected?: boolean }).__injected)).toBeUndefined();
    await page.close();
  });
});

describe("a server without search", () => {
  test("filters the listed tools in the page, case-insensitive over id, name and description, and asks nothing", async () => {
    const { page, tools } = await inspect(plain.url);
    expect(await page.getByRole("status").filter({ hasText: "Connected to" }).textContent()).not.toContain("search");
    const buttons = nav(page).getByRole("button");
    expect(await buttons.count()).toBe(catalog.length);
    await box(page).fill("INBOX");
    expect(await buttons.evaluateAll((all) => all.map((b) => b.ariaLabel))).toEqual(["Mail.ListEmails@1.0.0"]);
    await box(page).fill("calendar.create");
    expect(await buttons.evaluateAll((all) => all.map((b) => b.ariaLabel))).toEqual(["Calendar.CreateEvent@1.0.0"]);
    await box(page).fill("widget2");
    await box(page).press("Enter");
    expect(await buttons.count()).toBe(7); // Widget2 and Widget20 to Widget25
    await box(page).fill("");
    expect(await buttons.count()).toBe(catalog.length);
    expect(await searchStatus(page).count()).toBe(0);
    // Nothing but the one list: no q=, no ids=.
    expect(tools.map((request) => [...request.query.keys()].sort())).toEqual([["limit"]]);
    await page.close();
  });
});
