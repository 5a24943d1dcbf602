// The framework-neutral half of `loading: "server"` (src/tool-loader.ts) against a real server (test/fixture-server.ts): what it searches, loads and answers.
import { createClient, type OxpClient, OxpServerError } from "@otc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oxpToolLoader, SEARCH_TOOL_NAME } from "../src/index.js";
import { oxpTools } from "../src/vercel.js";
import { type FixtureServer, startFixtureServer } from "./fixture-server.js";

let server: FixtureServer;

beforeAll(async () => {
  server = await startFixtureServer();
});
afterAll(async () => {
  await server?.close();
});

/** A client that records the query of each GET /tools it sends (`q=` searches, `ids=` loads). */
function recordingClient(): { client: OxpClient; lists: URLSearchParams[] } {
  const lists: URLSearchParams[] = [];
  const client = createClient({
    baseUrl: server.url,
    retry: { maxAttempts: 1 },
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      if (request.method === "GET" && url.pathname === "/tools") {
        lists.push(url.searchParams);
      }
      return fetch(request);
    },
  });
  return { client, lists };
}

const loads = (lists: readonly URLSearchParams[]) => lists.flatMap((query) => query.getAll("ids"));

describe("oxpToolLoader", () => {
  it("describes the search tool with the toolkits and their descriptions, and takes a query and a toolkit", async () => {
    const loader = await oxpToolLoader(recordingClient().client);
    expect(loader.searchTool.name).toBe(SEARCH_TOOL_NAME);
    expect(loader.searchTool.description).toContain("loads the best 5");
    expect(loader.searchTool.description).toContain(
      "Calculator (Arithmetic on numbers.); Counter (A counter kept on the server.)",
    );
    expect(loader.searchTool.inputSchema).toMatchObject({
      required: ["query"],
      properties: { query: {}, toolkit: {} },
    });
    expect(loader.searchTool.inputSchema).not.toHaveProperty("properties.toolkit.enum");
  });

  it("loads each tool found once, in its latest version, with one GET /tools?ids=, and lists it once", async () => {
    const { client, lists } = recordingClient();
    const loader = await oxpToolLoader(client);
    const outcome = await loader.search({ query: "greets someone by name" });
    if (outcome.kind !== "value") {
      throw new Error(outcome.text);
    }
    // The server answers both versions of Greeting.Hello; the latest is loaded, under the one name.
    expect(outcome.result.tools.filter((tool) => tool.name === "Greeting_Hello")).toEqual([
      expect.objectContaining({ id: "Greeting.Hello@2.0.0", toolkit: "Greeting", score: expect.any(Number) }),
    ]);
    expect(outcome.loaded.map((spec) => spec.name)).toEqual(outcome.result.tools.map((tool) => tool.name));
    expect(JSON.parse(outcome.text)).toEqual(outcome.result);
    expect(lists.filter((query) => query.has("q"))).toHaveLength(1);
    expect(lists.filter((query) => query.has("ids"))).toHaveLength(1);

    // Found again, nothing is loaded again.
    const again = await loader.search({ query: "greets someone by name" });
    expect(again.kind).toBe("value");
    expect(lists.filter((query) => query.has("ids"))).toHaveLength(1);
    expect(loader.loaded().map((spec) => spec.definition.id)).toContain("Greeting.Hello@2.0.0");
  });

  it("lists and loads at most searchLimit tools", async () => {
    const loader = await oxpToolLoader(recordingClient().client, { searchLimit: 1 });
    const outcome = await loader.search({ query: "adds numbers to the counter" });
    expect(outcome.kind === "value" && outcome.result.tools).toHaveLength(1);
    expect(loader.loaded()).toHaveLength(1);
  });

  it("loads a version the options pin, and finds only among the tools and toolkits the options name", async () => {
    const loader = await oxpToolLoader(recordingClient().client, {
      tools: ["Greeting.Hello@1"],
      toolkits: ["Calculator"],
    });
    expect(loader.searchTool.inputSchema).toMatchObject({
      properties: { toolkit: { enum: ["Calculator", "Greeting"] } },
    });
    const greeting = await loader.search({ query: "greets someone" });
    expect(greeting.kind === "value" && greeting.result.tools.map((tool) => tool.id)).toEqual(["Greeting.Hello@1.0.0"]);
    const counter = await loader.search({ query: "counter" });
    expect(counter).toMatchObject({
      kind: "value",
      result: { tools: [], message: 'No tool matches "counter": search again with other words.' },
    });
    expect(await loader.load("Counter_Increment")).toBeUndefined();
  });

  it("loads a tool by the name the model calls it, once for parallel calls, and nothing for a name it does not have", async () => {
    const { client, lists } = recordingClient();
    const loader = await oxpToolLoader(client);
    const [first, second] = await Promise.all([loader.load("Calculator_Add"), loader.load("Calculator_Add")]);
    expect(first?.definition.id).toBe("Calculator.Add@1.0.0");
    expect(second).toBe(first);
    expect(loads(lists)).toEqual(["Calculator.Add"]);
    expect(loader.isLoaded("Calculator_Add")).toBe(true);
    expect(await first?.call({ a: 1, b: 2 })).toMatchObject({ kind: "value", value: 3 });

    const before = lists.length;
    expect(await loader.load("not a name!")).toBeUndefined();
    expect(await loader.load(SEARCH_TOOL_NAME)).toBeUndefined();
    expect(lists).toHaveLength(before);
    expect(await loader.load("Nowhere_Tool")).toBeUndefined();
  });

  it("answers the model what to correct: no query, a toolkit it does not have, a query the server refuses", async () => {
    const loader = await oxpToolLoader(recordingClient().client);
    expect(await loader.search({})).toEqual({
      kind: "invalid-input",
      text: "Error: search_tools needs a query: what the tool should do, in a few words.",
    });
    expect(await loader.search({ query: "x", toolkit: 3 })).toMatchObject({ kind: "invalid-input" });
    expect(await loader.search({ query: "x", toolkit: "Nowhere" })).toMatchObject({
      kind: "invalid-input",
      text: expect.stringContaining('there is no toolkit "Nowhere" to search; the toolkits: Calculator, Counter'),
    });
    // An empty toolkit, as models send for an optional property, is no toolkit.
    expect(await loader.search({ query: "counter", toolkit: "" })).toMatchObject({ kind: "value" });
    const long = Array.from({ length: 40 }, (_, index) => `w${index}`).join(" ");
    expect(await loader.search({ query: long })).toMatchObject({
      kind: "invalid-input",
      text: expect.stringMatching(/^Error: the server refused the search: /),
    });
  });

  it("refuses, before any run, options it cannot serve", async () => {
    const { client } = recordingClient();
    await expect(oxpToolLoader(client, { toolkits: ["Nowhere"] })).rejects.toThrow(
      'The server lists no toolkit "Nowhere"',
    );
    await expect(oxpToolLoader(client, { tools: ["Nowhere.Tool"] })).rejects.toThrow(OxpServerError);
    for (const searchLimit of [0, 51, 2.5]) {
      await expect(oxpToolLoader(client, { searchLimit })).rejects.toThrow(RangeError);
    }
    await expect(oxpTools(client, { loading: "lazy" as never })).rejects.toThrow(
      'loading is one of "eager", "provider", "server" (got "lazy")',
    );
  });
});
