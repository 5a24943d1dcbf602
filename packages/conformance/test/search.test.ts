// The search and cache groups against a small server (they pass where it is right, are not applicable where it offers neither extension, and fail each deliberate bug in the intended scenario only), and against @otc/server on the same catalog.
import { type Fixture, type Report, type RunOptions, runConformance, scenarios } from "@otc/conformance";
import { type AdapterOptions, createHandler, defineTool, listen } from "@otc/server/node";
import { describe, expect, it } from "vitest";
import { cachePolicyOf } from "../src/scenarios/cache.js";
import { queryOf, searchTokens } from "../src/scenarios/search.js";
import { CATALOG, type SearchBug, type SearchServerOptions, startSearchServer } from "./search-server.js";

const API_KEY = "search-server-api-key-0123456789abcdef";

/** A call that runs (the no-store check reads its 200 too). */
const FIXTURE: Fixture = {
  name: "search-server",
  safeCall: { tool_id: "Calc.Add@1.0.0", input: { a: 2, b: 3 }, value: 5 },
};

const ids = (prefix: string) => scenarios.filter((scenario) => scenario.id.startsWith(prefix)).map(({ id }) => id);
const SEARCH = ids("search.");
const CACHE = ids("cache.");
const GROUPS = [...SEARCH, ...CACHE];
/** The checks of every answer of the run: searches are ToolSearchResponses, /toolkits ToolkitListResponses. */
const EVERY_ANSWER = ["errors.no-leaks", "answers.schemas"];

async function check(server: SearchServerOptions, kit: Partial<RunOptions> = {}): Promise<Report> {
  const running = await startSearchServer(server);
  try {
    return await runConformance({ url: running.url, only: ["search.", "cache."], fixture: FIXTURE, ...kit });
  } finally {
    await running.close();
  }
}

const withStatus = (report: Report, status: string) =>
  report.results.filter((result) => result.status === status).map((result) => result.id);

/** Every scenario not applicable, saying which extension the discovery document does not list. */
function expectNotApplicable(report: Report, group: readonly string[], extension: string): void {
  const skipped = report.results.filter((result) => group.includes(result.id));
  expect(skipped.map((result) => result.id)).toEqual(group);
  for (const result of skipped) {
    expect(result, result.id).toMatchObject({
      status: "skip",
      reason: `not applicable: the server's discovery document does not list '${extension}'`,
    });
  }
}

describe("the search and cache groups", () => {
  it("run after the extensions group and before the hostile one, whose checks read every answer", () => {
    const order = scenarios.map((scenario) => scenario.id);
    expect(SEARCH.length).toBeGreaterThan(10);
    expect(CACHE).toEqual(["cache.etag", "cache.control", "cache.body-fields", "cache.no-store", "cache.tool-header"]);
    expect(order.indexOf("extensions.pagination.toolkit")).toBeLessThan(order.indexOf("search.discovery"));
    expect(order.indexOf("cache.tool-header")).toBeLessThan(order.indexOf("tasks.respond-async"));
    expect(order.indexOf("cache.tool-header")).toBeLessThan(order.indexOf("answers.schemas"));
  });

  it("pass every scenario on a right server, and its answers pass the checks of every answer", async () => {
    const report = await check({}, { only: ["search.", "cache.", ...EVERY_ANSWER] });
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
    expect(withStatus(report, "pass")).toEqual([...GROUPS, ...EVERY_ANSWER]);
  });

  it("pass with an API key, the lists private and discovery public", async () => {
    const report = await check({ apiKey: API_KEY }, { apiKey: API_KEY });
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
  });

  it("pass without annotations and pagination: deprecation is read from search items", async () => {
    const report = await check({ extensions: ["search", "cache"] });
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
  });

  it("report each extension's scenarios as not applicable where discovery lists it not", async () => {
    const report = await check({ extensions: ["annotations", "pagination"] });
    expectNotApplicable(report, SEARCH, "search");
    expectNotApplicable(report, CACHE, "cache");
    const searchOnly = await check({ extensions: ["annotations", "search"] });
    expect(withStatus(searchOnly, "pass")).toEqual(SEARCH);
    expectNotApplicable(searchOnly, CACHE, "cache");
    // Without search, the cache scenarios check the list and discovery alone.
    const cacheOnly = await check({ extensions: ["pagination", "cache"] });
    expectNotApplicable(cacheOnly, SEARCH, "search");
    expect(withStatus(cacheOnly, "pass")).toEqual(CACHE);
  });

  // Each bug, the scenarios that must fail on it (all others pass), and what the first of them says.
  const caught: [SearchBug, string[], RegExp][] = [
    ["discovery-bounds", ["search.discovery"], /extension_info.search is .*"max_limit":100/],
    ["unmatched-results", ["search.query"], /answers Calc.Sub@1.0.0, which has no word beginning with '/],
    [
      "descriptions-unsearched",
      ["search.query"],
      /q=quickly&limit=50 .* does not find Mail.Send@1.0.0, whose description has 'quickly'/,
    ],
    [
      "scores-ascending",
      ["search.query"],
      /q=widgets&limit=50 .* ranks Bulk.Tool10@1.0.0 \(score 2\) below Bulk.Tool0@1.0.0 \(score 1\): not best/,
    ],
    ["search-applied-header-missing", ["search.query"], /answered OXP-Extensions: \(none\), without search/],
    ["default-limit-20", ["search.pages"], /q=bulk \(OXP-Extensions: search\) has 12 items, expected 10 of 12/],
    ["full-last-page-cursor", ["search.pages"], /page 4 of .*limit=3 .* had a next_cursor, yet no match followed it/],
    [
      "cursor-drops-one",
      ["search.pages", "search.cursor"],
      /walking .*q=bulk&limit=3 .* by 3 leaves out Bulk.Tool1@1.0.0, .*, found by pages of 50/,
    ],
    ["summary-keeps-schemas", ["search.view"], /view=summary .* gives Bulk.Tool0@1.0.0 with its input_schema/],
    [
      "annotations-only-when-asked",
      ["search.view"],
      /gives Mail.Send@1.0.0 otherwise than GET \/tools with annotations lists it/,
    ],
    [
      "toolkit-filter-loose",
      ["search.toolkit"],
      /q=bulk&toolkit=bULK&limit=50 .* answers Bulk.Tool0@1.0.0, .*, not of toolkit bULK/,
    ],
    ["cursor-unbound-view", ["search.cursor"], /view=summary&cursor=.* \(another view\) answered 200, not 400/],
    ["cursor-unchecked", ["search.cursor"], /q=bulk%20oxpconformance&.* \(another q\) answered 200, not 400/],
    [
      "exact-not-first",
      ["search.exact-first"],
      /q=Mail.Send%401.0.0&limit=50 .* ranks Bulk.Tool0@1.0.0 first, not the tools it names: Mail.Send@1.0.0$/,
    ],
    [
      "exact-case-sensitive",
      ["search.exact-first"],
      /q=%20%20mail.send%20%20&.* ranks Mail.Send@2.0.0, Chat.Post@1.0.0 first, not the tools it names: Mail.Send@1.0.0, Mail.Send@2.0.0/,
    ],
    ["deprecated-not-demoted", ["search.deprecated"], /ranks the deprecated Mail.Send@1.0.0 at place 1/],
    ["ties-by-id-descending", ["search.deterministic"], /ranks Bulk.Tool9@1.0.0 above Bulk.Tool8@1.0.0, of the same/],
    ["bytes-vary", ["search.deterministic"], /q=bulk&limit=50 .* answered other bytes the second time/],
    ["limit-unbounded", ["search.bounds"], /q=x&limit=51 .* answered 200, not 400/],
    ["long-query-accepted", ["search.bounds"], /q=a{100}.* answered 200, not 400/],
    ["view-unchecked", ["search.bounds"], /q=x&view=tiny .* answered 200, not 400/],
    [
      "ids-in-catalog-order",
      ["search.ids"],
      /ids=Calc.Add%401.0.0,Chat.Post%401.0.0,Mail.Send%401.0.0 .* has Mail.Send@1.0.0 at place 1, where the list has Calc.Add@1.0.0/,
    ],
    ["ids-duplicated", ["search.ids", "search.ids.refused"], /gives 4 tools where the list has 2/],
    ["ids-latest-lowest", ["search.ids"], /ids=Mail.Send \(OXP-Extensions: search\) leaves out Mail.Send@2.0.0/],
    ["ids-unknown-skipped", ["search.ids.refused"], /OxpConformance.NoSuchTool .* answered 200, not 400/],
    ["ids-with-q", ["search.ids.refused"], /&q=Send .* answered 200, not 400/],
    [
      "toolkits-unsorted",
      ["search.toolkits"],
      /GET \/toolkits \(OXP-Extensions: search\) lists Chat after Mail: not by name, each once/,
    ],
    ["toolkits-count-versions", ["search.toolkits"], /gives Mail 3 tools, where GET \/tools lists 2/],
    ["toolkits-without-header", ["search.toolkits.off"], /GET \/toolkits answered 200, not 404/],
    ["search-without-header", ["search.off"], /GET \/tools\?q=bulk answered otherwise than without its query/],
    ["etag-weak", ["cache.etag"], /the list, .* has the ETag W\/".*", not a strong one/],
    ["etag-ignored-on-search", ["cache.etag"], /a search, .* with If-None-Match: ".*" answered 200, not 304/],
    [
      "304-without-cache-control",
      ["cache.etag"],
      /the list, .*'s 304 has Cache-Control \(none\), its 200 public, max-age=60/,
    ],
    ["etag-of-catalog", ["cache.etag"], /a search, .* and the list, .* answer other bytes with the same ETag/],
    [
      "discovery-private",
      ["cache.control"],
      /discovery, .* answered Cache-Control: private, max-age=60: discovery is the/,
    ],
    [
      "max-age-differs",
      ["cache.control"],
      /give max-age 60 \(.*\), 30 \(the toolkits, .*\): N is the server's one setting/,
    ],
    [
      "ttl-in-seconds",
      ["cache.body-fields"],
      /the list, .* has ttl_ms 60, where Cache-Control says max-age=60 \(60000 ms\)/,
    ],
    ["cache-fields-without-cache", ["cache.body-fields"], /the list, GET \/tools, without cache asked for, has ttl_ms/],
    [
      "no-store-missing-on-errors",
      ["cache.no-store"],
      /of an unknown tool .* answered 400 with Cache-Control: \(none\)/,
    ],
    [
      "tool-header-ignored",
      ["cache.tool-header"],
      /NoSuchTool with OXP-Tool: OxpConformance.OtherTool: the 400 does not/,
    ],
    ["tool-header-after-lookup", ["cache.tool-header"], /the 400 does not name both 'OxpConformance.OtherTool'/],
    [
      "tool-header-only-with-cache",
      ["cache.tool-header"],
      /NoSuchTool with OXP-Tool: OxpConformance.OtherTool: the 400 does not/,
    ],
    [
      "tool-header-case-insensitive",
      ["cache.tool-header"],
      /with OXP-Tool: oxpconformance.nosuchtool: the 400 does not name both/,
    ],
  ];
  it.concurrent.each(caught)("catches the bug %s in %j, and only there", async (bug, failing, reason) => {
    const report = await check({ bugs: [bug] });
    expect(withStatus(report, "fail")).toEqual(failing);
    expect(report.results.find((entry) => entry.id === failing[0])?.reason).toMatch(reason);
    expect(withStatus(report, "pass")).toEqual(GROUPS.filter((id) => !failing.includes(id)));
  });

  it("catches lists a shared cache may keep on a server that asks for credentials", async () => {
    const report = await check({ apiKey: API_KEY, bugs: ["lists-public-with-auth"] }, { apiKey: API_KEY });
    expect(withStatus(report, "fail")).toEqual(["cache.control"]);
    expect(report.results.find((entry) => entry.id === "cache.control")?.reason).toMatch(
      /the list, .* answered Cache-Control: public, max-age=60, on a server that asks for credentials \(GET \/tools without them is a 401\)/,
    );
  });

  it("walks every bug switch", () => {
    const switched = new Set([...caught.map(([bug]) => bug), "lists-public-with-auth"]);
    expect(switched.size).toBe(caught.length + 1);
  });
});

describe("the kit's readings", () => {
  it("cuts text into tokens as 9.5 says", () => {
    expect(searchTokens("SendEmail_v2")).toEqual(["send", "email", "v", "2"]);
    expect(searchTokens("HTTPServer créé")).toEqual(["http", "server", "cree"]);
  });

  it("percent-encodes query values, spaces as %20", () => {
    expect(queryOf({ q: "a b&c", limit: undefined, view: "full" })).toBe("?q=a%20b%26c&view=full");
    expect(queryOf({})).toBe("");
  });

  it("reads Cache-Control as a scope and a max-age, nothing else", () => {
    expect(cachePolicyOf("public, max-age=60")).toEqual({ scope: "public", maxAge: 60 });
    expect(cachePolicyOf("Max-Age=5,PRIVATE")).toEqual({ scope: "private", maxAge: 5 });
    for (const value of [
      undefined,
      "public",
      "max-age=60",
      "public, private, max-age=1",
      "public, max-age=60, no-store",
    ]) {
      expect(cachePolicyOf(value), value).toBeUndefined();
    }
  });
});

describe("the search and cache groups against @otc/server", () => {
  /** The small server's catalog, as tools: a deprecated version, toolkits described and not, twelve that tie. */
  const tools = CATALOG.map((definition) => {
    const [toolkit = "", name = ""] = definition.id.replace(/@.*/, "").split(".");
    const { requirements, annotations, deprecation_message } = definition as {
      requirements?: { user_id: boolean };
      annotations?: Record<string, boolean>;
      deprecation_message?: string;
    };
    return defineTool({
      toolkit,
      name,
      version: definition.version,
      description: definition.description,
      inputSchema: definition.input_schema as never,
      outputSchema: definition.output_schema as never,
      ...(requirements ? { requirements } : {}),
      ...(annotations ? { annotations } : {}),
      ...(deprecation_message ? { deprecationMessage: deprecation_message } : {}),
      run: ((input: Record<string, unknown>) =>
        definition.id === "Calc.Add@1.0.0" ? Number(input.a) + Number(input.b) : { done: definition.id }) as never,
    });
  });
  const options: AdapterOptions = {
    tools,
    toolkits: { Mail: { description: "Sending and reading mail." }, Calc: { description: "Arithmetic." } },
    logger: false,
    validateResponses: true,
  };

  async function checkReal(server: Partial<AdapterOptions>, kit: Partial<RunOptions> = {}): Promise<Report> {
    const running = await listen(createHandler({ ...options, ...server }), { port: 0 });
    try {
      return await runConformance({
        url: running.url,
        only: ["search.", "cache.", ...EVERY_ANSWER],
        fixture: FIXTURE,
        ...kit,
      });
    } finally {
      await running.close();
    }
  }

  it("passes every scenario, with authentication off and with an API key", async () => {
    for (const [server, kit] of [
      [{}, {}],
      [{ auth: { apiKeys: [API_KEY] } }, { apiKey: API_KEY }],
    ] as const) {
      const report = await checkReal(server, kit);
      expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
      expect(withStatus(report, "pass")).toEqual([...GROUPS, ...EVERY_ANSWER]);
    }
  });

  it("passes with search and cache alone, and reports both groups as not applicable where it offers neither", async () => {
    const alone = await checkReal({ extensions: ["search", "cache"] });
    expect(alone.results.filter((result) => result.status !== "pass")).toEqual([]);
    const neither = await checkReal({ extensions: ["annotations", "pagination"] });
    expectNotApplicable(neither, SEARCH, "search");
    expectNotApplicable(neither, CACHE, "cache");
    expect(withStatus(neither, "pass")).toEqual(EVERY_ANSWER);
  });

  it("reports search.deprecated as not applicable for a catalog without a deprecated version", async () => {
    const report = await checkReal({
      tools: tools.filter((tool) => tool.deprecationMessage === undefined),
      toolkits: {},
    });
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([
      expect.objectContaining({
        id: "search.deprecated",
        status: "skip",
        reason: "not applicable: no tool of the catalog has both a deprecated version and one that is not",
      }),
    ]);
  });
});
