// docs/protocol.md 9.1, 9.2 and 9.4 over HTTP: discovery, negotiation, annotations and pagination, on every adapter.
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineTool, listen, type Tool } from "../src/index.js";
import { callTool, expectError, expectSchema, makeServer, type Running, send, startServer } from "./harness.js";

let server: Running;
/** The same catalog with every extension turned off: what OXP 1.0 answers. */
let plain: Running;
beforeAll(async () => {
  [server, plain] = await Promise.all([startServer(), startServer({ extensions: false })]);
});
afterAll(() => Promise.all([server.close(), plain.close()]));

const ask = (extensions: string, init: RequestInit = {}) => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), "OXP-Extensions": extensions },
});

/** A listed definition's id, for short assertions. */
const ids = (body: { items: { id: string }[] }) => body.items.map((tool) => tool.id);

/** A reply's headers but the clock's. */
const headersOf = (reply: { headers: Headers }) =>
  Object.fromEntries([...reply.headers].filter(([name]) => name !== "date" && name !== "keep-alive"));

describe("discovery", () => {
  verifies("extensions.discovery", "GET /.well-known/oxp lists the versions and extensions", async () => {
    const reply = await send(`${server.baseUrl}/.well-known/oxp`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get("oxp-version")).toBe("1.0");
    expectSchema("DiscoveryDocument", reply.body);
    expect(reply.body).toEqual({
      oxp_versions: ["1.0"],
      extensions: ["annotations", "tasks", "pagination", "search", "cache"],
      extension_info: { search: { max_limit: 50, max_query_length: 256, max_terms: 32, max_ids: 100 } },
    });
    const none = await send(`${plain.baseUrl}/.well-known/oxp`);
    expect(none.body).toEqual({ oxp_versions: ["1.0"], extensions: [] });
  });

  verifies("extensions.discovery", "is served without authentication, and answers HEAD", async () => {
    const guarded = await startServer({ auth: { apiKeys: ["k".repeat(32)] } });
    try {
      expect((await send(`${guarded.baseUrl}/tools`)).status).toBe(401);
      const reply = await send(`${guarded.baseUrl}/.well-known/oxp`);
      expect(reply.status).toBe(200);
      expect(reply.body.extensions).toEqual(["annotations", "tasks", "pagination", "search", "cache"]);
      expect((await send(`${guarded.baseUrl}/.well-known/oxp`, { method: "HEAD" })).status).toBe(200);
      expectError(await send(`${guarded.baseUrl}/.well-known/oxp`, { method: "POST" }), 405);
    } finally {
      await guarded.close();
    }
  });

  it("refuses an extension it does not implement when built", () => {
    expect(() => makeServer({ tools: [], extensions: ["subscriptions" as never] })).toThrow(
      /'subscriptions' is not one this server implements/,
    );
  });
});

describe("negotiation", () => {
  verifies("extensions.negotiation", "reads ids case-insensitively, with spaces, ignoring unknown ones", async () => {
    const reply = await send(`${server.baseUrl}/tools`, ask(" ANNOTATIONS ,frobnicate,, "));
    expect(reply.headers.get("oxp-extensions")).toBe("annotations");
    expect(reply.body.items[0].annotations).toEqual(expect.any(Object));
    const unknown = await send(`${server.baseUrl}/tools`, ask("frobnicate"));
    expect(unknown.headers.get("oxp-extensions")).toBeNull();
    expect(unknown.text).toBe((await send(`${server.baseUrl}/tools`)).text);
  });

  verifies("extensions.negotiation", "ignores an extension the server turned off", async () => {
    const reply = await send(`${plain.baseUrl}/tools?limit=1`, ask("annotations, pagination"));
    expect(reply.headers.get("oxp-extensions")).toBeNull();
    expect(reply.body.items).toHaveLength(8);
    expect(reply.body.items[0]).not.toHaveProperty("annotations");
  });

  verifies(
    "extensions.off-without-header",
    "answers a request without the header as a server without extensions does",
    async () => {
      const requests: [string, RequestInit?][] = [
        ["/tools"],
        ["/tools?limit=1&cursor=x&toolkit=Greeting"],
        ["/health"],
        ["/tools/calls/abc"],
        ["/tools/calls/abc/events"],
        ["/nope"],
        ["/tools", { headers: { "OXP-Version": "2.0" } }],
      ];
      for (const [path, init] of requests) {
        const [mine, theirs] = await Promise.all([
          send(`${server.baseUrl}${path}`, init),
          send(`${plain.baseUrl}${path}`, init),
        ]);
        expect(mine.status, path).toBe(theirs.status);
        expect(mine.text, path).toBe(theirs.text);
        expect(headersOf(mine), path).toEqual(headersOf(theirs));
      }
      for (const body of [
        { tool_id: "Calculator.Add", input: { a: 1, b: 2 }, call_id: "same" },
        { tool_id: "Calculator.Add", input: { a: "1" } },
        { tool_id: "Nope.Nope" },
      ]) {
        const [mine, theirs] = await Promise.all([callTool(server.baseUrl, body), callTool(plain.baseUrl, body)]);
        expect(mine.status).toBe(theirs.status);
        const { duration: _a, ...mineBody } = mine.body;
        const { duration: _b, ...theirBody } = theirs.body;
        expect(mineBody).toEqual(theirBody);
        expect(Object.keys(headersOf(mine)).sort()).toEqual(Object.keys(headersOf(theirs)).sort());
      }
      expect((await send(`${server.baseUrl}/tools/calls/abc`)).status).toBe(404);
    },
  );
});

describe("the list's headers", () => {
  verifies(
    "extensions.applied-header",
    "names the extensions that shaped the list, in the server's order",
    async () => {
      expect((await send(`${server.baseUrl}/tools`)).headers.get("oxp-extensions")).toBeNull();
      expect((await send(`${server.baseUrl}/tools`, ask("annotations"))).headers.get("oxp-extensions")).toBe(
        "annotations",
      );
      expect(
        (await send(`${server.baseUrl}/tools`, ask("pagination, Annotations"))).headers.get("oxp-extensions"),
      ).toBe("annotations, pagination");
    },
  );

  verifies("extensions.vary", "always varies on OXP-Extensions; each form has its own ETag", async () => {
    const bare = await send(`${server.baseUrl}/tools`);
    const annotated = await send(`${server.baseUrl}/tools`, ask("annotations"));
    for (const reply of [bare, annotated]) {
      expect(reply.headers.get("vary")).toMatch(/\bOXP-Extensions\b/);
      expect(reply.headers.get("vary")).toMatch(/\bAccept-Encoding\b/);
    }
    expect(annotated.headers.get("etag")).toMatch(/^"/);
    expect(annotated.headers.get("etag")).not.toBe(bare.headers.get("etag"));
    const revalidated = await send(
      `${server.baseUrl}/tools`,
      ask("annotations", { headers: { "If-None-Match": annotated.headers.get("etag") ?? "" } }),
    );
    expect(revalidated.status).toBe(304);
    // The annotated form's ETag does not revalidate the 1.0 form.
    const other = await send(`${server.baseUrl}/tools`, {
      headers: { "If-None-Match": annotated.headers.get("etag") ?? "" },
    });
    expect(other.status).toBe(200);
  });
});

describe("annotations", () => {
  verifies(
    ["annotations.listed-when-asked", "annotations.meaning"],
    "lists annotations and deprecation messages only when asked",
    async () => {
      const bare = await send(`${server.baseUrl}/tools`);
      for (const tool of bare.body.items) {
        expect(tool).not.toHaveProperty("annotations");
        expect(tool).not.toHaveProperty("deprecation_message");
      }
      const reply = await send(`${server.baseUrl}/tools`, ask("annotations"));
      expectSchema("ToolListResponse", reply.body);
      const byId = new Map(reply.body.items.map((tool: { id: string }) => [tool.id, tool]));
      expect(byId.get("Calculator.Add@1.0.0")).toMatchObject({
        annotations: { title: "Add two numbers", read_only: true, idempotent: true, open_world: false },
      });
      expect(byId.get("SMS.Send@0.1.2")).toMatchObject({ annotations: { destructive: true, open_world: true } });
      expect(byId.get("Greeting.Hello@1.0.0")).toMatchObject({
        deprecation_message: "Use Greeting.Hello@2.0.0, which speaks Spanish too.",
      });
      // A tool without annotations is listed without them: its hints take their defaults.
      expect(byId.get("Counter.Increment@1.0.0")).not.toHaveProperty("annotations");
      // Apart from the two fields, the forms are the same.
      const stripped = reply.body.items.map(
        ({ annotations: _a, deprecation_message: _d, ...rest }: Record<string, unknown>) => rest,
      );
      expect(stripped).toEqual(bare.body.items);
    },
  );

  const tool = (extra: Record<string, unknown>): Tool =>
    defineTool({
      toolkit: "Bad",
      name: "Hints",
      version: "1.0.0",
      description: "Has bad hints.",
      inputSchema: {},
      outputSchema: {},
      run: () => null,
      ...extra,
    });
  verifies.each([
    ["another key", { annotations: { readOnlyHint: true } }],
    ["a hint that is not a boolean", { annotations: { idempotent: "yes" } }],
    ["an empty title", { annotations: { title: "" } }],
    ["read-only and destructive", { annotations: { read_only: true, destructive: true } }],
    ["an empty deprecation message", { deprecationMessage: "" }],
  ])("annotations.checked-at-start", "refuses %s at start-up, naming the tool", (_case, extra) => {
    expect(() => makeServer({ tools: [tool(extra)] })).toThrow(/Tool 'Bad\.Hints@1\.0\.0' is refused/);
  });
});

describe("pagination", () => {
  const page = (query: string, base = server.baseUrl) => send(`${base}/tools${query}`, ask("pagination"));

  verifies("pagination.pages", "walks the whole list in pages of `limit`, in order", async () => {
    const whole = ids((await send(`${server.baseUrl}/tools`)).body);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const reply = await page(`?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(reply.status).toBe(200);
      expectSchema("ToolListResponse", reply.body);
      expect(reply.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...ids(reply.body));
      cursor = reply.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(whole);
    // The last page has no next_cursor; a limit that takes everything gives one page.
    expect((await page("?limit=8")).body).not.toHaveProperty("next_cursor");
  });

  verifies("pagination.pages", "pages by 100 when no limit is given", async () => {
    const many = Array.from({ length: 250 }, (_, index) =>
      defineTool({
        toolkit: "Many",
        name: `T${index}`,
        version: "1.0.0",
        description: "One of many.",
        inputSchema: {},
        outputSchema: {},
        run: () => index,
      }),
    );
    const big = await listen(makeServer({ tools: many, logger: false }), { port: 0 });
    try {
      const first = await page("", big.url);
      expect(first.body.items).toHaveLength(100);
      const second = await page(`?cursor=${first.body.next_cursor}`, big.url);
      expect(ids(second.body)[0]).toBe("Many.T100@1.0.0");
      const third = await page(`?cursor=${second.body.next_cursor}`, big.url);
      expect(third.body.items).toHaveLength(50);
      expect(third.body).not.toHaveProperty("next_cursor");
      // A cursor of this catalog means nothing to another one.
      expectError(await page(`?cursor=${first.body.next_cursor}`), 400);
    } finally {
      await big.close();
    }
  });

  verifies(
    "pagination.cursor-bound-to-catalog",
    "refuses a cursor it did not make, or one of another filter",
    async () => {
      const first = await page("?limit=1&toolkit=Greeting");
      expect(first.body.next_cursor).toEqual(expect.any(String));
      for (const query of [
        "?cursor=bm90IGEgY3Vyc29y",
        "?cursor=%00%01",
        `?cursor=${"A".repeat(2000)}`,
        `?cursor=${first.body.next_cursor}`,
        `?toolkit=Calculator&cursor=${first.body.next_cursor}`,
      ]) {
        const reply = await page(query);
        expectError(reply, 400);
        expect(reply.body.message, query).toMatch(/first page/);
      }
      const next = await page(`?limit=1&toolkit=Greeting&cursor=${first.body.next_cursor}`);
      expect(ids(next.body)).toEqual(["Greeting.Hello@2.0.0"]);
    },
  );

  verifies("pagination.limit-checked", "refuses a limit out of 1..1000 or a toolkit that is no name", async () => {
    for (const query of [
      "?limit=0",
      "?limit=1001",
      "?limit=abc",
      "?limit=1.5",
      "?limit=-1",
      "?limit=",
      "?toolkit=a.b",
    ]) {
      expectError(await page(query), 400);
    }
    expect((await page("?limit=1000")).status).toBe(200);
  });

  verifies("pagination.toolkit-filter", "keeps one toolkit's tools, exactly as ids match", async () => {
    expect(ids((await page("?toolkit=Greeting")).body)).toEqual(["Greeting.Hello@1.0.0", "Greeting.Hello@2.0.0"]);
    expect((await page("?toolkit=greeting")).body).toEqual({ items: [] });
    expect((await page("?toolkit=Nope")).body).toEqual({ items: [] });
  });

  verifies("pagination.ignored-without-header", "lists everything when pagination is not asked for", async () => {
    const whole = await send(`${server.baseUrl}/tools`);
    for (const query of ["?limit=1", "?limit=0", "?cursor=garbage", "?toolkit=Greeting", "?toolkit=a.b"]) {
      const reply = await send(`${server.baseUrl}/tools${query}`);
      expect(reply.status, query).toBe(200);
      expect(reply.text, query).toBe(whole.text);
    }
  });
});
