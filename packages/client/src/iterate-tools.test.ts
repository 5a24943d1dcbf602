// iterateTools against hostile paginating servers on loopback: cursors that go round in a cycle, pages that never end,
// cursors that grow without bound. Each must end in a clear error, after a bounded number of requests.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { json } from "@otc/test-helpers/hostile-server";
import type { ToolDefinition } from "@otc/types";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "./client.js";
import { OxpProtocolError } from "./errors.js";

/** One valid tool definition, numbered: every page is a well-formed ToolListResponse. */
const tool = (index: number): ToolDefinition => ({
  id: `Hostile.T${index}@1.0.0`,
  name: `Hostile_T${index}`,
  description: "One of a catalog that never ends.",
  version: "1.0.0",
  input_schema: { type: "object", properties: {} },
  output_schema: null,
});

/**
 * Past this many pages the server gives a last page (no next_cursor), so a client that does not stop on its own
 * ends there instead of hanging the test: it then sees no error, and the test fails on that.
 */
const SERVER_GIVES_UP = 5_000;

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/**
 * A paginating server on 127.0.0.1 whose `GET /tools` answers one tool and `next(cursor, page)` as its next_cursor,
 * up to page `last`, which has none; the cursor each page was asked with, in order.
 */
async function hostile(next: (cursor: string | null, page: number) => string, last = SERVER_GIVES_UP) {
  const asked: (string | null)[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/.well-known/oxp") {
      json(res, 200, { oxp_versions: ["1.0"], extensions: ["pagination"] });
    } else if (url.pathname === "/tools") {
      const cursor = url.searchParams.get("cursor");
      asked.push(cursor);
      const page = asked.length;
      json(res, 200, page >= last ? { items: [tool(page)] } : { items: [tool(page)], next_cursor: next(cursor, page) });
    } else {
      json(res, 404, { message: "Not found" });
    }
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked };
}

/** What iterating gives: the tools yielded before it ended, and the error it ended with (undefined when none). */
async function iterate(iterator: AsyncIterable<ToolDefinition>) {
  const tools: ToolDefinition[] = [];
  try {
    for await (const each of iterator) {
      tools.push(each);
    }
    return { tools, error: undefined };
  } catch (error) {
    return { tools, error };
  }
}

describe("iterateTools against a server whose pages never end", () => {
  it("refuses a cursor it was given before: A, B, A is a cycle, not a catalog", async () => {
    const server = await hostile((_cursor, page) => (page % 2 === 1 ? "A" : "B"));
    const { tools, error } = await iterate(createClient({ baseUrl: server.url }).iterateTools());
    expect(error).toBeInstanceOf(OxpProtocolError);
    expect((error as Error).message).toMatch(
      /on page 3, a next_cursor it had already given: its pages go round in a cycle/,
    );
    // The first page, A's and B's: the third gives A again and is not followed.
    expect(server.asked).toEqual([null, "A", "B"]);
    expect(tools.map((each) => each.id)).toEqual(["Hostile.T1@1.0.0", "Hostile.T2@1.0.0", "Hostile.T3@1.0.0"]);
  });

  it("refuses a longer cycle as well, once it comes back to a cursor", async () => {
    const cycle = ["c1", "c2", "c3", "c4", "c5"];
    const server = await hostile((_cursor, page) => cycle[(page - 1) % cycle.length] as string);
    const { error } = await iterate(createClient({ baseUrl: server.url }).iterateTools({ limit: 1 }));
    expect((error as Error).message).toMatch(/on page 6, a next_cursor it had already given/);
    expect(server.asked).toEqual([null, ...cycle]);
  });

  it("stops at maxPages when every page gives a new cursor, naming the bound", async () => {
    const server = await hostile((_cursor, page) => `page-${page + 1}`);
    const { tools, error } = await iterate(createClient({ baseUrl: server.url }).iterateTools({ maxPages: 25 }));
    expect(error).toBeInstanceOf(OxpProtocolError);
    expect((error as Error).message).toBe(
      "GET /tools has more pages than iterateTools reads (maxPages: 25): stopped after page 25",
    );
    expect(server.asked).toHaveLength(25);
    // What was read is yielded before the error.
    expect(tools).toHaveLength(25);
  });

  it("stops after 1,000 pages by default", async () => {
    const server = await hostile((_cursor, page) => `page-${page + 1}`);
    const { tools, error } = await iterate(createClient({ baseUrl: server.url }).iterateTools());
    expect((error as Error).message).toMatch(/\(maxPages: 1000\): stopped after page 1000$/);
    expect(server.asked).toHaveLength(1_000);
    expect(tools).toHaveLength(1_000);
  });

  it("stops when the cursors it keeps to find a cycle would pass maxResponseBytes in all", async () => {
    // Each cursor is new and 1,000 characters long: 4 of them fit in 4,096 bytes, the 5th does not.
    const server = await hostile((_cursor, page) => `${page}`.padEnd(1_000, "x"));
    const client = createClient({ baseUrl: server.url, maxResponseBytes: 4_096 });
    const { error } = await iterate(client.iterateTools());
    expect((error as Error).message).toBe(
      "GET /tools answered cursors longer in all than the client keeps (maxResponseBytes: 4096): stopped after page 5",
    );
    expect(server.asked).toHaveLength(5);
  });

  it("refuses a maxPages that is no whole number before asking anything", async () => {
    const server = await hostile((_cursor, page) => `page-${page + 1}`);
    const client = createClient({ baseUrl: server.url });
    for (const maxPages of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(client.iterateTools({ maxPages }).next()).rejects.toThrow(
        /^maxPages must be a whole number of pages, 1 or more/,
      );
    }
    expect(server.asked).toEqual([]);
  });

  it("reads a catalog of exactly maxPages pages to its end", async () => {
    const server = await hostile((_cursor, page) => `page-${page + 1}`, 3);
    const { tools, error } = await iterate(createClient({ baseUrl: server.url }).iterateTools({ maxPages: 3 }));
    expect(error).toBeUndefined();
    expect(tools).toHaveLength(3);
    expect(server.asked).toEqual([null, "page-2", "page-3"]);
  });
});
