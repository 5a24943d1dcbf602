/**
 * Scenarios for docs/protocol.md section 9, the extensions beyond OXP 1.0. Discovery and the OXP 1.0 answer to a
 * request that asks for no extension apply to every server; an extension's own scenarios are not applicable where
 * the server's discovery document does not list it, so an OXP 1.0 server passes without any.
 */
import {
  type DiscoveryDocument,
  OXP_VERSION,
  parseToolId,
  TOOLS_CALLS_EVENTS_PATH_TEMPLATE,
  TOOLS_CALLS_PATH_TEMPLATE,
  TOOLS_PATH,
  type ToolDefinition,
  WELL_KNOWN_OXP_PATH,
} from "@otc/types";
import { type Answer, type Http, header } from "../http.js";
import {
  type Context,
  check,
  checkError,
  checkSchema,
  checkStatus,
  Failure,
  need,
  notApplicable,
  type Scenario,
  Skip,
  truncate,
} from "../scenario.js";

/** The request header that asks for extensions, and the answer header naming those applied. */
export const EXTENSIONS_HEADER = "OXP-Extensions";

/** The extensions that shape the answer to GET /tools. */
const LIST_EXTENSIONS: readonly string[] = ["annotations", "pagination"];

/** The extensions a request may ask for that the kit knows of (tasks has its own group: scenarios/tasks.ts). */
const KNOWN_EXTENSIONS: readonly string[] = ["annotations", "tasks", "pagination"];

/**
 * The extension ids the server's discovery document lists, in its order, read leniently for the scenarios' context:
 * none when the server serves no document or an unreadable one (`extensions.discovery` judges the document).
 */
export async function listedExtensions(http: Http): Promise<string[]> {
  try {
    const answer = await http.send({ path: WELL_KNOWN_OXP_PATH });
    const listed = (answer.json as { extensions?: unknown } | undefined)?.extensions;
    return answer.status === 200 && Array.isArray(listed)
      ? listed.filter((id): id is string => typeof id === "string")
      : [];
  } catch {
    return [];
  }
}

/** GET /tools with a query, asking for `asked` (the header's value as sent) when given. */
const listTools = (ctx: Context, query = "", asked?: string) =>
  ctx.http.send({ path: `${TOOLS_PATH}${query}`, headers: asked === undefined ? {} : { [EXTENSIONS_HEADER]: asked } });

/** How a request is named in messages: its path and query, and the extensions it asked for. */
const described = (query: string, asked?: string) =>
  `GET ${TOOLS_PATH}${query}${asked === undefined ? "" : ` (${EXTENSIONS_HEADER}: ${asked})`}`;

/** A ToolListResponse's body, after checking the answer is a 200 with an `items` array. */
export function listOf(answer: Answer, what: string): { items: ToolDefinition[]; next_cursor?: unknown } {
  check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
  const body = answer.json as { items?: unknown; next_cursor?: unknown } | undefined;
  check(Array.isArray(body?.items), `${what}: the body has no items: ${truncate(answer.text)}`);
  return body as { items: ToolDefinition[]; next_cursor?: unknown };
}

/** The ids an answer's `OXP-Extensions` header names, lower-cased, in its order. */
export const appliedBy = (answer: Answer) =>
  (header(answer, "oxp-extensions") ?? "")
    .split(",")
    .map((id) => id.trim().toLowerCase())
    .filter((id) => id !== "");

/** JSON with every object's keys sorted: two values are the same when these are equal, whatever their key order. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === "object" && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  ) ?? "(absent)";

/** A definition without the annotations extension's fields: as OXP 1.0 lists it. */
function withoutAnnotations(tool: ToolDefinition): ToolDefinition {
  const { annotations: _annotations, deprecation_message: _deprecation, ...plain } = tool;
  return plain;
}

/**
 * Fails unless `got` and `want` list the same tools in the same order, saying what differs: a tool missing, one
 * too many, or the first place they part.
 */
export function checkSameTools(got: readonly ToolDefinition[], want: readonly ToolDefinition[], what: string): void {
  const gotIds = got.map((tool) => tool.id);
  const wantIds = want.map((tool) => tool.id);
  const missing = wantIds.filter((id) => !gotIds.includes(id));
  check(missing.length === 0, `${what} leaves out ${missing.slice(0, 5).join(", ")}`);
  const extra = gotIds.filter((id) => !wantIds.includes(id));
  check(extra.length === 0, `${what} has tools the list has not: ${extra.slice(0, 5).join(", ")}`);
  check(got.length === want.length, `${what} gives ${got.length} tools where the list has ${want.length}`);
  const differs = got.findIndex((tool, index) => canonical(tool) !== canonical(want[index]));
  check(
    differs === -1 || gotIds[differs] === wantIds[differs],
    `${what} has ${gotIds[differs]} at place ${differs + 1}, where the list has ${wantIds[differs]}`,
  );
  check(
    differs === -1,
    `${what} lists ${gotIds[differs]} otherwise than the list: ${truncate(canonical(got[differs]))}, listed ${truncate(canonical(want[differs]))}`,
  );
}

/** Ends the scenario as not applicable unless the server's discovery document lists `id`. */
export function needExtension(ctx: Context, id: string): void {
  if (!ctx.extensions.includes(id)) {
    notApplicable(`the server's discovery document does not list '${id}'`);
  }
}

/** The listed extensions that shape GET /tools, in the discovery document's order. */
const listShapers = (ctx: Context) => ctx.extensions.filter((id) => LIST_EXTENSIONS.includes(id));

/** The whole list as OXP 1.0 answers it. */
const wholeList = async (ctx: Context) => listOf(await listTools(ctx), described("")).items;

/** A page size that takes a few pages to walk any catalog (2 for the demo's), within the limit's range. */
const smallLimit = (tools: number) => Math.min(1000, Math.max(2, Math.ceil(tools / 50)));

/**
 * Walks the list with pagination asked, from the first page on: every page a 200 ToolListResponse of at most
 * `limit` tools naming `pagination` in `OXP-Extensions`; the tools in the order given. The walk stops at
 * `tools + 2` pages: cursors that never end fail it.
 */
async function walk(
  ctx: Context,
  options: { limit: number; toolkit?: string; tools: number },
): Promise<ToolDefinition[]> {
  const seen: ToolDefinition[] = [];
  const filter = options.toolkit === undefined ? "" : `&toolkit=${encodeURIComponent(options.toolkit)}`;
  let cursor: string | undefined;
  for (let pages = 1; pages <= options.tools + 2; pages++) {
    const query = `?limit=${options.limit}${filter}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const what = `page ${pages}, ${described(query, "pagination")}`;
    const answer = await listTools(ctx, query, "pagination");
    const page = listOf(answer, what);
    checkSchema("ToolListResponse", answer.json, what);
    check(page.items.length <= options.limit, `${what} has ${page.items.length} tools, past its limit`);
    check(
      appliedBy(answer).includes("pagination"),
      `${what}: ${EXTENSIONS_HEADER} names ${header(answer, "oxp-extensions") ?? "nothing"}, not pagination`,
    );
    seen.push(...page.items);
    if (page.next_cursor === undefined) {
      return seen;
    }
    cursor = String(page.next_cursor);
  }
  throw new Failure(
    `the cursors of ${described(`?limit=${options.limit}${filter}`, "pagination")} go on past ${options.tools + 2} pages`,
  );
}

/** The toolkit of a listed tool (the part of its id before the dot). */
export const toolkitOf = (tool: ToolDefinition) => parseToolId(tool.id)?.toolkit ?? tool.id.split(".")[0] ?? "";

export const extensionScenarios: Scenario[] = [
  {
    id: "extensions.discovery",
    section: "9.1",
    rules: ["extensions.discovery"],
    level: "project",
    title: `GET ${WELL_KNOWN_OXP_PATH} answers a DiscoveryDocument without authentication, asked for extensions or not`,
    async run(ctx) {
      let answer = await ctx.http.send({ path: WELL_KNOWN_OXP_PATH }, true);
      if (answer.status === 401 && (ctx.auth.apiKey !== undefined || ctx.auth.jwtSecret !== undefined)) {
        // A server whose unknown paths are guarded is told apart from one that guards discovery.
        const guarded = await ctx.http.send({ path: WELL_KNOWN_OXP_PATH });
        check(guarded.status === 404, `${WELL_KNOWN_OXP_PATH} needs authentication: 401 without credentials`);
        answer = guarded;
      }
      if (answer.status === 404) {
        const asked = await listTools(ctx, "", KNOWN_EXTENSIONS.join(", "));
        check(
          appliedBy(asked).length === 0,
          `${WELL_KNOWN_OXP_PATH} is a 404, yet ${described("", KNOWN_EXTENSIONS.join(", "))} applied ${header(asked, "oxp-extensions")}`,
        );
        notApplicable(`${WELL_KNOWN_OXP_PATH} is a 404: the server applies no extension (OXP 1.0)`);
      }
      checkStatus(answer, 200);
      check(
        /^application\/json/i.test(header(answer, "content-type") ?? ""),
        `${WELL_KNOWN_OXP_PATH} is not JSON: ${header(answer, "content-type") ?? "(no content type)"}`,
      );
      checkSchema("DiscoveryDocument", answer.json, `GET ${WELL_KNOWN_OXP_PATH}`);
      const document = answer.json as DiscoveryDocument;
      check(document.oxp_versions.includes(OXP_VERSION), `oxp_versions ${canonical(document.oxp_versions)} lacks 1.0`);
      const everything = [...new Set([...document.extensions, ...KNOWN_EXTENSIONS])].join(", ");
      const asking = await ctx.http.send(
        { path: WELL_KNOWN_OXP_PATH, headers: { [EXTENSIONS_HEADER]: everything } },
        true,
      );
      checkStatus(asking, 200);
      check(
        canonical(asking.json) === canonical(answer.json),
        `asked for ${everything}, ${WELL_KNOWN_OXP_PATH} answered otherwise: ${truncate(asking.text)}`,
      );
    },
  },
  {
    id: "extensions.off.list",
    section: "9.1",
    rules: ["extensions.off-without-header", "annotations.listed-when-asked", "pagination.pages"],
    level: "project",
    title: `Without ${EXTENSIONS_HEADER}, GET /tools is OXP 1.0's: no annotations, deprecation_message, next_cursor or ${EXTENSIONS_HEADER}`,
    async run(ctx) {
      const answer = await listTools(ctx);
      const list = listOf(answer, described(""));
      check(!("next_cursor" in list), `${described("")} has a next_cursor`);
      for (const tool of list.items) {
        check(!("annotations" in tool), `${described("")} lists ${tool.id} with annotations`);
        check(!("deprecation_message" in tool), `${described("")} lists ${tool.id} with a deprecation_message`);
      }
      check(
        header(answer, "oxp-extensions") === undefined,
        `${described("")} answered ${EXTENSIONS_HEADER}: ${header(answer, "oxp-extensions")}`,
      );
    },
  },
  {
    id: "extensions.off.query",
    section: "9.4",
    rules: ["pagination.ignored-without-header", "endpoints.lenient-get"],
    level: "project",
    title: `Without ${EXTENSIONS_HEADER}, limit, cursor and toolkit are ignored: GET /tools lists everything`,
    async run(ctx) {
      const whole = await listTools(ctx);
      listOf(whole, described(""));
      const toolkit = ctx.tools[0] ? toolkitOf(ctx.tools[0]) : "OxpConformance";
      for (const query of [
        "?limit=1",
        "?limit=0",
        "?cursor=oxp-conformance-not-a-cursor",
        `?toolkit=${encodeURIComponent(toolkit)}`,
        "?toolkit=a.b",
      ]) {
        const answer = await listTools(ctx, query);
        listOf(answer, described(query));
        check(answer.text === whole.text, `${described(query)} answered another list: ${truncate(answer.text)}`);
      }
    },
  },
  {
    id: "extensions.off.unknown-ids",
    section: "9.1",
    rules: ["extensions.negotiation", "extensions.off-without-header"],
    level: "project",
    title: `${EXTENSIONS_HEADER} naming only ids the server does not apply is ignored: GET /tools is OXP 1.0's`,
    async run(ctx) {
      const whole = await listTools(ctx);
      listOf(whole, described(""));
      const unapplied = KNOWN_EXTENSIONS.filter((id) => !ctx.extensions.includes(id));
      for (const asked of [[...unapplied, "oxp-conformance-unknown"].join(", "), " , ,", "x-oxp-conformance"]) {
        const answer = await listTools(ctx, "", asked);
        listOf(answer, described("", asked));
        check(answer.text === whole.text, `${described("", asked)} answered another list: ${truncate(answer.text)}`);
        check(
          appliedBy(answer).length === 0,
          `${described("", asked)} answered ${EXTENSIONS_HEADER}: ${header(answer, "oxp-extensions")}`,
        );
      }
    },
  },
  {
    id: "extensions.off.task-paths",
    section: "9.1",
    rules: ["extensions.off-without-header", "endpoints.unknown-route"],
    level: "project",
    title: `Without ${EXTENSIONS_HEADER}, /tools/calls/{call_id} and its events are 404s, as any unknown path`,
    async run(ctx) {
      const call = TOOLS_CALLS_PATH_TEMPLATE.replace("{call_id}", "oxp-conformance-no-such-call");
      const events = TOOLS_CALLS_EVENTS_PATH_TEMPLATE.replace("{call_id}", "oxp-conformance-no-such-call");
      for (const [method, path] of [
        ["GET", call],
        ["DELETE", call],
        ["GET", events],
      ] as const) {
        const answer = await ctx.http.send({ method, path });
        check(answer.status === 404, `${method} ${path} answered ${answer.status}: ${truncate(answer.text)}`);
        checkError(answer, 404);
      }
    },
  },
  {
    id: "extensions.negotiation",
    section: "9.1",
    rules: ["extensions.negotiation"],
    level: "project",
    title: `${EXTENSIONS_HEADER} is read case-insensitively, spaces and unknown ids ignored`,
    async run(ctx) {
      const id =
        listShapers(ctx)[0] ?? notApplicable("the discovery document lists neither annotations nor pagination");
      const clean = await listTools(ctx, "", id);
      listOf(clean, described("", id));
      const messy = ` ${id.toUpperCase()} ,oxp-conformance-unknown,, `;
      const answer = await listTools(ctx, "", messy);
      listOf(answer, described("", messy));
      check(
        appliedBy(answer).join(", ") === id,
        `${described("", messy)} answered ${EXTENSIONS_HEADER}: ${header(answer, "oxp-extensions") ?? "(none)"}, not ${id}`,
      );
      check(answer.text === clean.text, `${described("", messy)} answered otherwise than ${described("", id)}`);
    },
  },
  {
    id: "extensions.applied-header",
    section: "9.1",
    rules: ["extensions.applied-header"],
    level: "project",
    title: `GET /tools names the extensions that shaped it in ${EXTENSIONS_HEADER}, in the discovery document's order`,
    async run(ctx) {
      const shapers = listShapers(ctx);
      if (shapers.length === 0) {
        notApplicable("the discovery document lists neither annotations nor pagination");
      }
      // Each alone, then all of them asked in reverse order and another case: named in the document's order.
      const requests = [
        ...shapers.map((id) => [id, id]),
        [[...shapers].reverse().map(swapCase).join(", "), shapers.join(", ")],
      ];
      for (const [asked = "", named = ""] of requests) {
        const answer = await listTools(ctx, "", asked);
        listOf(answer, described("", asked));
        check(
          appliedBy(answer).join(", ") === named,
          `${described("", asked)} answered ${EXTENSIONS_HEADER}: ${header(answer, "oxp-extensions") ?? "(none)"}, expected ${named}`,
        );
      }
    },
  },
  {
    id: "extensions.vary",
    section: "9.1",
    rules: ["extensions.vary"],
    level: "project",
    title: `GET /tools always answers Vary naming ${EXTENSIONS_HEADER}; each form of the list has its own ETag`,
    async run(ctx) {
      if (ctx.extensions.length === 0) {
        notApplicable("the discovery document lists no extension: the list has one form");
      }
      const bare = await listTools(ctx);
      const forms: [string | undefined, Answer][] = [[undefined, bare]];
      for (const id of listShapers(ctx)) {
        forms.push([id, await listTools(ctx, "", id)]);
      }
      for (const [asked, answer] of forms) {
        listOf(answer, described("", asked));
        const vary = (header(answer, "vary") ?? "").split(",").map((name) => name.trim().toLowerCase());
        check(
          vary.includes("oxp-extensions") || vary.includes("*"),
          `${described("", asked)} answered Vary: ${header(answer, "vary") ?? "(none)"}, without ${EXTENSIONS_HEADER}`,
        );
      }
      const annotated = forms.find(([asked]) => asked === "annotations")?.[1];
      const [bareTag, annotatedTag] = [bare, annotated].map((answer) => answer && header(answer, "etag"));
      if (annotated && bareTag && annotatedTag && canonical(annotated.json) !== canonical(bare.json)) {
        check(annotatedTag !== bareTag, `the annotated list and the OXP 1.0 one share the ETag ${bareTag}`);
        const revalidated = await ctx.http.send({ path: TOOLS_PATH, headers: { "If-None-Match": annotatedTag } });
        check(revalidated.status !== 304, `the annotated list's ETag revalidates the OXP 1.0 list (304)`);
      }
    },
  },
  {
    id: "extensions.annotations.listed",
    section: "9.2",
    rules: [
      "annotations.listed-when-asked",
      "annotations.meaning",
      "annotations.checked-at-start",
      "extensions.applied-header",
    ],
    level: "project",
    title:
      "Asked for annotations, GET /tools lists well-formed ones, never read-only and destructive, and nothing else new",
    async run(ctx) {
      needExtension(ctx, "annotations");
      const plain = await wholeList(ctx);
      const answer = await listTools(ctx, "", "annotations");
      const what = described("", "annotations");
      const list = listOf(answer, what);
      for (const tool of list.items) {
        const hints = tool.annotations as Record<string, unknown> | undefined;
        check(
          !(hints?.read_only === true && hints.destructive === true),
          `${what} lists ${tool.id} as both read_only and destructive`,
        );
        if (hints !== undefined) {
          checkSchema("ToolAnnotations", hints, `${what}: ${tool.id}'s annotations`);
        }
      }
      checkSchema("ToolListResponse", answer.json, what);
      check(!("next_cursor" in list), `${what} has a next_cursor, though pagination was not asked for`);
      check(
        appliedBy(answer).join(", ") === "annotations",
        `${what} answered ${EXTENSIONS_HEADER}: ${header(answer, "oxp-extensions") ?? "(none)"}, not annotations`,
      );
      checkSameTools(list.items.map(withoutAnnotations), plain, `${what}, its two fields taken out,`);
    },
  },
  {
    id: "extensions.annotations.fixture",
    section: "9.2",
    rules: ["annotations.listed-when-asked"],
    level: "project",
    title: "Asked for annotations, the fixture's tools carry exactly their annotations and deprecation messages",
    async run(ctx) {
      needExtension(ctx, "annotations");
      const expected = need(ctx.fixture.annotated, "the fixture names no annotated tool");
      const what = described("", "annotations");
      const list = listOf(await listTools(ctx, "", "annotations"), what);
      for (const entry of expected) {
        const tool = list.items.find((candidate) => candidate.id === entry.tool_id);
        check(tool !== undefined, `${what} does not list ${entry.tool_id}`);
        check(
          canonical(tool.annotations) === canonical(entry.annotations),
          `${entry.tool_id} is listed with annotations ${canonical(tool.annotations)}, expected ${canonical(entry.annotations)}`,
        );
        check(
          tool.deprecation_message === entry.deprecation_message,
          `${entry.tool_id} is listed with deprecation_message ${canonical(tool.deprecation_message)}, expected ${canonical(entry.deprecation_message)}`,
        );
      }
    },
  },
  {
    id: "extensions.pagination.pages",
    section: "9.4",
    rules: ["pagination.pages", "extensions.applied-header"],
    level: "project",
    title: "Walking the pages with a small limit gives the whole list, in order; one large page, or 100 by default",
    async run(ctx) {
      needExtension(ctx, "pagination");
      const whole = await wholeList(ctx);
      const limit = smallLimit(whole.length);
      checkSameTools(await walk(ctx, { limit, tools: whole.length }), whole, `walking pages of ${limit}`);
      for (const [query, size] of [
        [`?limit=${Math.min(1000, Math.max(1, whole.length))}`, Math.min(1000, whole.length)],
        ["", Math.min(100, whole.length)],
      ] as const) {
        const what = described(query, "pagination");
        const page = listOf(await listTools(ctx, query, "pagination"), what);
        checkSameTools(page.items, whole.slice(0, size), what);
        check(
          (page.next_cursor !== undefined) === whole.length > size,
          `${what} ${page.next_cursor === undefined ? "has no" : "has a"} next_cursor, with ${whole.length - size} tools to follow`,
        );
      }
    },
  },
  {
    id: "extensions.pagination.limit",
    section: "9.4",
    rules: ["pagination.limit-checked"],
    level: "project",
    title: "Asked for pagination, a limit outside 1..1000 or a toolkit that is no name is a 400",
    async run(ctx) {
      needExtension(ctx, "pagination");
      for (const query of [
        "?limit=0",
        "?limit=1001",
        "?limit=-1",
        "?limit=1.5",
        "?limit=abc",
        "?limit=",
        "?toolkit=a.b",
      ]) {
        const answer = await listTools(ctx, query, "pagination");
        check(answer.status === 400, `${described(query, "pagination")} answered ${answer.status}, not 400`);
        checkError(answer, 400);
      }
      for (const limit of [1, 1000]) {
        const what = described(`?limit=${limit}`, "pagination");
        const page = listOf(await listTools(ctx, `?limit=${limit}`, "pagination"), what);
        check(page.items.length <= limit, `${what} has ${page.items.length} tools`);
      }
    },
  },
  {
    id: "extensions.pagination.cursor",
    section: "9.4",
    rules: ["pagination.cursor-bound-to-catalog"],
    level: "project",
    title: "A cursor the server did not make, a tampered one, or one sent with another toolkit filter is a 400",
    async run(ctx) {
      needExtension(ctx, "pagination");
      const refused = async (query: string) => {
        const answer = await listTools(ctx, query, "pagination");
        check(answer.status === 400, `${described(query, "pagination")} answered ${answer.status}, not 400`);
        checkError(answer, 400);
      };
      for (const cursor of ["oxp-conformance-not-a-cursor", "%00%01", "A".repeat(2000)]) {
        await refused(`?cursor=${cursor}`);
      }
      const whole = await wholeList(ctx);
      const [first] = whole;
      const page = listOf(await listTools(ctx, "?limit=1", "pagination"), described("?limit=1", "pagination"));
      if (first === undefined || typeof page.next_cursor !== "string") {
        throw new Skip("GET /tools?limit=1 gave no next_cursor (fewer than two tools): no cursor to tamper with");
      }
      const cursor = page.next_cursor;
      const tampered = [cursor.slice(0, Math.floor(cursor.length / 2)), [...cursor].reverse().join("")];
      for (const other of tampered.filter((value) => value !== "" && value !== cursor)) {
        await refused(`?limit=1&cursor=${encodeURIComponent(other)}`);
      }
      // Made without a toolkit filter, sent with one; and made with one, sent without it.
      await refused(`?limit=1&toolkit=${encodeURIComponent(toolkitOf(first))}&cursor=${encodeURIComponent(cursor)}`);
      const shared = whole.find((tool) => whole.filter((other) => toolkitOf(other) === toolkitOf(tool)).length > 1);
      if (shared) {
        const filter = `?limit=1&toolkit=${encodeURIComponent(toolkitOf(shared))}`;
        const filtered = listOf(await listTools(ctx, filter, "pagination"), described(filter, "pagination"));
        check(typeof filtered.next_cursor === "string", `${described(filter, "pagination")} has no next_cursor`);
        await refused(`?limit=1&cursor=${encodeURIComponent(filtered.next_cursor)}`);
      }
      // The cursor as it was made still serves its page.
      const next = `?limit=1&cursor=${encodeURIComponent(cursor)}`;
      checkSameTools(
        listOf(await listTools(ctx, next, "pagination"), described(next, "pagination")).items,
        whole.slice(1, 2),
        next,
      );
    },
  },
  {
    id: "extensions.pagination.toolkit",
    section: "9.4",
    rules: ["pagination.toolkit-filter"],
    level: "project",
    title:
      "toolkit=Name keeps the tools whose id starts with 'Name.', matched exactly; an unknown one gives an empty page",
    async run(ctx) {
      needExtension(ctx, "pagination");
      const whole = await wholeList(ctx);
      const toolkits = [...new Set(whole.map(toolkitOf))].slice(0, 5);
      // Each toolkit, then near misses a loose match would take: another case, and a prefix of the name.
      const names = new Set(toolkits);
      for (const toolkit of toolkits.slice(0, 2)) {
        names.add(swapCase(toolkit));
        if (toolkit.length > 1) {
          names.add(toolkit.slice(0, -1));
        }
      }
      names.add("OxpConformanceNoSuchToolkit");
      for (const toolkit of names) {
        const kept = whole.filter((tool) => tool.id.startsWith(`${toolkit}.`));
        const limit = smallLimit(kept.length);
        const got = await walk(ctx, { limit, toolkit, tools: kept.length });
        checkSameTools(got, kept, `walking toolkit=${toolkit} by ${limit}`);
      }
    },
  },
];

/** `name` with its letters' case swapped: another toolkit, since ids match case-sensitively. */
export function swapCase(name: string): string {
  return [...name].map((char) => (char === char.toUpperCase() ? char.toLowerCase() : char.toUpperCase())).join("");
}
