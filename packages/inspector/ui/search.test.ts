// The search box's steps (ui/search.ts) against real @otc/server instances on loopback: the server's ranked summaries and their pages, a match's definition by ids=, the local filter of a server without search, and the debounce on a test clock.
import { createClient } from "@otc/client";
import { createHandler, defineTool, listen, type RunningServer, type Tool } from "@otc/server/node";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import type { ToolAnnotations, ToolDefinition } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { debounce, filterTools, loadDefinition, SEARCH_PAGE_SIZE, searchServer } from "./search.js";

/** A tool of `toolkit` that takes `to` and answers null; `annotations` replaces its hints. */
function tool(toolkit: string, name: string, description: string, annotations?: ToolAnnotations): Tool {
  return defineTool({
    toolkit,
    name,
    version: "1.0.0",
    description,
    inputSchema: { type: "object", properties: { to: { type: "string", description: "Who gets it." } } },
    outputSchema: null,
    annotations: annotations ?? { read_only: false, destructive: false },
    run: () => null,
  });
}

const catalog: Tool[] = [
  tool("Mail", "SendEmail", "Sends an email message to one recipient."),
  tool("Mail", "ListEmails", "Lists the messages in the inbox.", { read_only: true }),
  tool("Calendar", "CreateEvent", "Adds an event to the calendar."),
  ...Array.from({ length: 25 }, (_, index) => tool("Bulk", `Widget${index + 1}`, `Turns widget number ${index + 1}.`)),
];

let searching: RunningServer;
let plain: RunningServer;

beforeAll(async () => {
  [searching, plain] = await Promise.all([
    listen(createHandler({ tools: catalog, logger: false }), { port: 0 }),
    listen(createHandler({ tools: catalog, logger: false, extensions: ["annotations", "pagination"] }), { port: 0 }),
  ]);
});

afterAll(async () => {
  await Promise.all([searching?.close(), plain?.close()]);
});

/** A client whose requests the test sees: the URL and the OXP-Extensions header of each. */
function observedClient(baseUrl: string) {
  const sent: { url: URL; extensions: string | null }[] = [];
  const client = createClient({
    baseUrl,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      sent.push({ url: new URL(request.url), extensions: request.headers.get("oxp-extensions") });
      return fetch(request);
    },
  });
  return { client, sent };
}

describe("searchServer", () => {
  it("asks GET /tools?q= for summaries, a page at a time, and answers the matches best first with their toolkit and score", async () => {
    const { client, sent } = observedClient(searching.url);
    const page = await searchServer(client, { query: "send an email" });
    expect(page.items[0]).toMatchObject({ id: "Mail.SendEmail@1.0.0", toolkit: "Mail" });
    expect(page.items[0]?.score).toBeGreaterThan(0);
    // Summaries: no schemas until the user picks one.
    expect(page.items[0]).not.toHaveProperty("input_schema");
    const scores = page.items.map((match) => match.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(page.nextCursor).toBeUndefined();
    const asked = sent.filter((request) => request.url.pathname === "/tools");
    expect(asked).toHaveLength(1);
    expect(Object.fromEntries(asked[0]?.url.searchParams ?? [])).toEqual({
      q: "send an email",
      view: "summary",
      limit: String(SEARCH_PAGE_SIZE),
    });
    expect(asked[0]?.extensions).toBe("search");
  });

  it("follows next_cursor to the next page, and keeps to a toolkit", async () => {
    const { client, sent } = observedClient(searching.url);
    const first = await searchServer(client, { query: "widget", toolkit: "Bulk" });
    expect(first.items).toHaveLength(SEARCH_PAGE_SIZE);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await searchServer(client, { query: "widget", toolkit: "Bulk", cursor: first.nextCursor as string });
    expect(second.items).toHaveLength(25 - SEARCH_PAGE_SIZE);
    expect(second.nextCursor).toBeUndefined();
    const ids = [...first.items, ...second.items].map((match) => match.id);
    expect(new Set(ids).size).toBe(25);
    expect(ids.every((id) => id.startsWith("Bulk."))).toBe(true);
    const [, last] = sent.filter((request) => request.url.pathname === "/tools");
    expect(last?.url.searchParams.get("cursor")).toBe(first.nextCursor);
    expect(last?.url.searchParams.get("toolkit")).toBe("Bulk");
  });

  it("lets the server judge the query: a too-long one is its 400, thrown for the page to show", async () => {
    const { client } = observedClient(searching.url);
    await expect(searchServer(client, { query: "x".repeat(300) })).rejects.toMatchObject({
      status: 400,
      message: "The query must be 1 to 256 characters",
    });
  });
});

describe("loadDefinition", () => {
  it("loads a match's whole definition with GET /tools?ids=, with its annotations when asked", async () => {
    const { client, sent } = observedClient(searching.url);
    const definition = await loadDefinition(client, "Mail.ListEmails@1.0.0", true);
    expect(definition.id).toBe("Mail.ListEmails@1.0.0");
    expect(definition.input_schema).toMatchObject({ properties: { to: { type: "string" } } });
    expect(definition.annotations).toEqual({ read_only: true });
    const asked = sent.filter((request) => request.url.pathname === "/tools");
    expect(asked.map((request) => request.url.searchParams.get("ids"))).toEqual(["Mail.ListEmails@1.0.0"]);
    expect(asked[0]?.extensions).toBe("annotations, search");
  });

  it("refuses an id the server has no tool for, with the server's message", async () => {
    const { client } = observedClient(searching.url);
    await expect(loadDefinition(client, "Mail.Nothing@1.0.0", false)).rejects.toMatchObject({ status: 400 });
  });
});

describe("filterTools, for a server without search", () => {
  let tools: ToolDefinition[];
  beforeAll(async () => {
    tools = await createClient({ baseUrl: plain.url }).listTools({ annotations: true });
  });

  it.each([
    ["an empty query keeps every tool", "  ", 28],
    ["a word of a description, in any case", "INBOX", ["Mail.ListEmails@1.0.0"]],
    ["a part of an id", "calendar.create", ["Calendar.CreateEvent@1.0.0"]],
    ["a name", "sendemail", ["Mail.SendEmail@1.0.0"]],
    ["every word, anywhere", "widget 12", ["Bulk.Widget12@1.0.0"]],
    ["a word in no tool", "zebra", []],
  ])("%s", (_name, query, want) => {
    const kept = filterTools(tools, query, true);
    if (typeof want === "number") {
      expect(kept).toHaveLength(want);
    } else {
      expect(kept.map((kept) => kept.id)).toEqual(want);
    }
  });

  it("searches titles only where the server listed annotations", () => {
    const titled = { ...tools[0], annotations: { title: "Post a letter" } } as ToolDefinition;
    expect(filterTools([titled], "letter", true)).toEqual([titled]);
    expect(filterTools([titled], "letter", false)).toEqual([]);
  });
});

describe("debounce", () => {
  it("asks once per pause in the typing, with the last value; flush asks at once and drops the one waiting", async () => {
    const clock = new ManualClock();
    const asked: string[] = [];
    const search = debounce((value) => asked.push(value), 300, clock);
    search.schedule("s");
    search.schedule("se");
    await clock.advance(299);
    expect(asked).toEqual([]);
    search.schedule("sen");
    await clock.advance(299);
    expect(asked).toEqual([]);
    await clock.advance(1);
    expect(asked).toEqual(["sen"]);
    search.schedule("send e");
    search.flush("send email");
    expect(asked).toEqual(["sen", "send email"]);
    await clock.advance(1_000);
    expect(asked).toEqual(["sen", "send email"]);
    search.schedule("x");
    search.cancel();
    await clock.advance(1_000);
    expect(asked).toEqual(["sen", "send email"]);
    expect(clock.pending).toBe(0);
  });
});
