/**
 * Scenarios for docs/protocol.md 9.5, the search extension, where the server's discovery document lists `search`.
 * The kit does not know the catalog: every query comes from the server's own `GET /tools` (a tool's id, a word of its
 * description, the word most tools share), and every answer is judged against that list.
 */
import {
  compareToolVersions,
  parseToolId,
  TOOLKITS_PATH,
  TOOLS_PATH,
  type ToolDefinition,
  type ToolkitListResponse,
  type ToolSearchItem,
  unwrapInputSchema,
  WELL_KNOWN_OXP_PATH,
} from "@otc/types";
import { type Answer, header } from "../http.js";
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
import {
  appliedBy,
  canonical,
  checkSameTools,
  EXTENSIONS_HEADER,
  listOf,
  needExtension,
  swapCase,
  toolkitOf,
} from "./extensions.js";

/** The bounds 9.5 sets, as the discovery document must give them (`[search.discovery]`). */
export const SEARCH_INFO = { max_limit: 50, max_query_length: 256, max_terms: 32, max_ids: 100 } as const;
/** A search's page size when it asks for none. */
const DEFAULT_LIMIT = 10;
/** The extensions other than search that shape GET /tools. */
const LIST_SHAPERS: readonly string[] = ["annotations", "pagination"];

/**
 * A text's search tokens as `[search.ranking]` cuts them: at every character that is not a letter or digit, between
 * a lower- and an upper-case letter, before the last of several capitals a lower-case letter follows, between letters
 * and digits; then folded to lower case without accents.
 */
export function searchTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const word of text.normalize("NFKD").split(/[^\p{L}\p{N}\p{M}]+/u)) {
    for (const part of word.split(
      /(?<=\p{Ll})(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})|(?<=\p{L})(?=\p{N})|(?<=\p{N})(?=\p{L})/u,
    )) {
      const folded = part.replace(/\p{M}+/gu, "").toLowerCase();
      if (folded !== "") {
        tokens.push(folded);
      }
    }
  }
  return tokens;
}

/** Lower case without accents: how the kit looks for a term in a tool's text, leniently. */
const fold = (text: string) =>
  text
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();

/** The parts of a listed tool's id; a malformed id is its own toolkit-less tool. */
function partsOf(tool: ToolDefinition): { toolkit: string; tool: string; qualified: string } {
  const parsed = parseToolId(tool.id);
  return parsed
    ? { toolkit: parsed.toolkit, tool: parsed.tool, qualified: parsed.qualifiedName }
    : { toolkit: toolkitOf(tool), tool: tool.name, qualified: tool.id.split("@")[0] ?? tool.id };
}

/**
 * The tokens of what a server surely searches a tool by: its toolkit, the tool part of its id, its description, and
 * the names, descriptions and enum values of its input's top-level parameters. A tool with a token that a term begins
 * must be among that term's matches.
 */
function surelySearched(tool: ToolDefinition): string[] {
  const { toolkit, tool: name } = partsOf(tool);
  const texts = [toolkit, name, tool.description];
  const schema = unwrapInputSchema(tool.input_schema) as { properties?: unknown } | undefined;
  const properties = schema && typeof schema === "object" ? schema.properties : undefined;
  if (properties && typeof properties === "object") {
    for (const [property, value] of Object.entries(properties as Record<string, unknown>)) {
      texts.push(property);
      const { description, enum: values } = (value ?? {}) as { description?: unknown; enum?: unknown };
      if (typeof description === "string") {
        texts.push(description);
      }
      if (Array.isArray(values)) {
        texts.push(...values.filter((entry): entry is string => typeof entry === "string"));
      }
    }
  }
  return texts.flatMap(searchTokens);
}

/**
 * Everything a server may search a tool by, folded into one text: its id, name and description, and every parameter
 * name, description and enum value at any depth. An item that matches a term has the term in this text.
 */
function searchableText(tool: ToolDefinition): string {
  const texts = [tool.id, tool.name, tool.description];
  const visit = (value: unknown, depth: number): void => {
    if (depth > 32 || typeof value !== "object" || value === null) {
      return;
    }
    if (Array.isArray(value)) {
      for (const entry of value) {
        visit(entry, depth + 1);
      }
      return;
    }
    for (const [key, entry] of Object.entries(value)) {
      if (key === "properties" && entry && typeof entry === "object") {
        texts.push(...Object.keys(entry));
      }
      if ((key === "description" || key === "title") && typeof entry === "string") {
        texts.push(entry);
      }
      if (key === "enum" && Array.isArray(entry)) {
        texts.push(...entry.filter((item): item is string => typeof item === "string"));
      }
      visit(entry, depth + 1);
    }
  };
  visit(tool.input_schema, 0);
  return fold(texts.join(" "));
}

/** Whether one of `tokens` begins with `term` (a term matches a token equal to it or longer). */
const begins = (tokens: readonly string[], term: string) => tokens.some((token) => token.startsWith(term));

/** The catalog as the server lists it: OXP 1.0's form, and the annotated one where annotations are listed. */
interface Catalog {
  plain: ToolDefinition[];
  annotated: ToolDefinition[] | undefined;
}

async function catalogOf(ctx: Context): Promise<Catalog> {
  const plain = listOf(await ctx.http.send({ path: TOOLS_PATH }), `GET ${TOOLS_PATH}`).items;
  if (!ctx.extensions.includes("annotations")) {
    return { plain, annotated: undefined };
  }
  const answer = await ctx.http.send({ path: TOOLS_PATH, headers: { [EXTENSIONS_HEADER]: "annotations" } });
  return { plain, annotated: listOf(answer, `GET ${TOOLS_PATH} (${EXTENSIONS_HEADER}: annotations)`).items };
}

/** The catalog's tools, or a skip when it has none: a search of nothing proves nothing. */
const toolsOf = (catalog: Catalog) => {
  if (catalog.plain.length === 0) {
    throw new Skip("the server lists no tools to search for");
  }
  return catalog.plain;
};

/** A query string with each value percent-encoded (spaces as `%20`, not `+`). */
export function queryOf(params: Readonly<Record<string, string | undefined>>): string {
  const pairs = Object.entries(params).filter((pair): pair is [string, string] => pair[1] !== undefined);
  return pairs.length === 0 ? "" : `?${pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join("&")}`;
}

/** How a request is named in messages. */
const described = (path: string, query: string, asked: string | undefined) =>
  `GET ${path}${truncate(query, 120)}${asked === undefined ? "" : ` (${EXTENSIONS_HEADER}: ${asked})`}`;

/** A GET, asking for `asked` (the header's value as sent) when given. */
const get = (ctx: Context, path: string, query = "", asked?: string) =>
  ctx.http.send({ path: `${path}${query}`, headers: asked === undefined ? {} : { [EXTENSIONS_HEADER]: asked } });

/** A search's answer: the body of a 200 ToolSearchResponse, after checking it is one. */
interface Searched {
  answer: Answer;
  what: string;
  items: ToolSearchItem[];
  next_cursor?: string;
}

/** GET /tools with the search parameters, asking for search; the answer must be a 200 ToolSearchResponse. */
async function search(
  ctx: Context,
  params: Readonly<Record<string, string | undefined>>,
  asked = "search",
): Promise<Searched> {
  const query = queryOf(params);
  const what = described(TOOLS_PATH, query, asked);
  const answer = await get(ctx, TOOLS_PATH, query, asked);
  check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
  checkSchema("ToolSearchResponse", answer.json, what);
  const body = answer.json as { items: ToolSearchItem[]; next_cursor?: string };
  return {
    answer,
    what,
    items: body.items,
    ...(body.next_cursor === undefined ? {} : { next_cursor: body.next_cursor }),
  };
}

/**
 * Every match of a search, walked page by page with `limit` from the first page on: each page at most `limit` items,
 * a `next_cursor` exactly when more follow (a cursor whose page is empty fails it). The walk stops past `maxPages`.
 */
async function walkSearch(
  ctx: Context,
  params: Readonly<Record<string, string | undefined>>,
  limit: number,
  maxPages: number,
): Promise<{ items: ToolSearchItem[]; first: Searched }> {
  const items: ToolSearchItem[] = [];
  let cursor: string | undefined;
  let first: Searched | undefined;
  for (let pages = 1; pages <= maxPages; pages++) {
    const page = await search(ctx, { ...params, limit: String(limit), cursor });
    first ??= page;
    check(page.items.length <= limit, `${page.what} has ${page.items.length} items, past its limit`);
    if (pages > 1) {
      check(page.items.length > 0, `page ${pages - 1} of ${first.what} had a next_cursor, yet no match followed it`);
    }
    items.push(...page.items);
    if (page.next_cursor === undefined) {
      return { items, first };
    }
    cursor = page.next_cursor;
  }
  throw new Failure(`the cursors of ${first?.what ?? "a search"} go on past ${maxPages} pages`);
}

/** Enough pages of `limit` for every tool of the catalog to match, and two more. */
const pagesFor = (tools: number, limit: number) => Math.ceil(tools / limit) + 2;

/** Fails unless no id is listed twice. */
function checkNoDuplicates(items: readonly { id: string }[], what: string): void {
  const seen = new Set<string>();
  for (const { id } of items) {
    check(!seen.has(id), `${what} lists ${id} twice`);
    seen.add(id);
  }
}

/** Up to `count` tools, the first of each toolkit before a second of any: queries that reach across the catalog. */
function spread(tools: readonly ToolDefinition[], count: number): ToolDefinition[] {
  const firsts = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    if (!firsts.has(toolkitOf(tool))) {
      firsts.set(toolkitOf(tool), tool);
    }
  }
  const picked = [...firsts.values()].slice(0, count);
  for (const tool of tools) {
    if (picked.length >= count) {
      break;
    }
    if (!picked.includes(tool)) {
      picked.push(tool);
    }
  }
  return picked;
}

/** The word of a tool's description (lower-case letters, four or more) that the fewest other tools share. */
function rareWord(tool: ToolDefinition, tools: readonly ToolDefinition[]): string | undefined {
  const words = [...tool.description.matchAll(/(?<![\p{L}\p{N}\p{M}])[a-z]{4,}(?![\p{L}\p{N}\p{M}])/gu)].map(
    ([word]) => word,
  );
  let best: { word: string; tools: number } | undefined;
  for (const word of new Set(words)) {
    const sharing = tools.filter((other) => begins(surelySearched(other), word)).length;
    if (best === undefined || sharing < best.tools) {
      best = { word, tools: sharing };
    }
  }
  return best?.word;
}

/** The token (three or more letters where there is one) that the most tools have: a query with many matches. */
function broadTerm(tools: readonly ToolDefinition[]): string {
  const counts = new Map<string, number>();
  for (const tool of tools) {
    for (const token of new Set(surelySearched(tool))) {
      counts.set(token, (counts.get(token) ?? 0) + 1);
    }
  }
  const ranked = [...counts].sort(([a, x], [b, y]) => {
    const [wordA, wordB] = [/^[a-z]{3,}$/.test(a), /^[a-z]{3,}$/.test(b)];
    return wordA !== wordB ? (wordA ? -1 : 1) : y !== x ? y - x : a < b ? -1 : a > b ? 1 : 0;
  });
  return need(ranked[0]?.[0], "no tool of the catalog has a word to search for");
}

/** A word that no tool has: its search must match nothing. */
function unknownWord(tools: readonly ToolDefinition[]): string {
  const texts = tools.map(searchableText);
  let word = "oxpconformancezqx";
  while (texts.some((text) => text.includes(word))) {
    word += "q";
  }
  return word;
}

/** What a search item is once its toolkit and score are taken out, in the form the list gives. */
function asListed(item: ToolSearchItem, annotated: boolean): Record<string, unknown> {
  const { toolkit: _toolkit, score: _score, ...definition } = item;
  if (annotated) {
    return definition;
  }
  const { annotations: _annotations, deprecation_message: _deprecation, ...plain } = definition;
  return plain;
}

/** The spellings of a tool that a query may equal to name it (`[search.exact-first]`), lower-cased. */
function spellings(tool: ToolDefinition): string[] {
  const { tool: name, qualified } = partsOf(tool);
  return [tool.id, qualified, tool.name, name].map((spelling) => spelling.toLowerCase());
}

/** The tools a query names exactly, ignoring case and surrounding spaces. */
const namedBy = (tools: readonly ToolDefinition[], query: string) =>
  tools.filter((tool) => spellings(tool).includes(query.trim().toLowerCase()));

/** The versions of each `Toolkit.Tool`, by name, in the list's order. */
function versionsByTool(tools: readonly ToolDefinition[]): Map<string, ToolDefinition[]> {
  const byTool = new Map<string, ToolDefinition[]>();
  for (const tool of tools) {
    const { qualified } = partsOf(tool);
    byTool.set(qualified, [...(byTool.get(qualified) ?? []), tool]);
  }
  return byTool;
}

/** The highest of a tool's versions, compared numerically (`[tool-id.latest]`). */
const latestOf = (versions: readonly ToolDefinition[]) =>
  [...versions].sort((a, b) => compareToolVersions(b.version, a.version))[0] as ToolDefinition;

/** A 400 JSON error's message and developer message, as one text to look for names in. */
const errorText = (answer: Answer) => {
  const body = (answer.json ?? {}) as { message?: unknown; developer_message?: unknown };
  return `${String(body.message ?? "")} ${String(body.developer_message ?? "")}`;
};

/** Fails unless the answer names the extension search in `OXP-Extensions`. */
function checkApplied(answer: Answer, what: string): void {
  check(
    appliedBy(answer).includes("search"),
    `${what} answered ${EXTENSIONS_HEADER}: ${header(answer, "oxp-extensions") ?? "(none)"}, without search`,
  );
}

export const searchScenarios: Scenario[] = [
  {
    id: "search.discovery",
    section: "9.5",
    rules: ["search.discovery"],
    level: "project",
    title: "The discovery document lists search with its bounds in extension_info.search",
    async run(ctx) {
      needExtension(ctx, "search");
      const answer = await ctx.http.send({ path: WELL_KNOWN_OXP_PATH });
      checkStatus(answer, 200);
      checkSchema("DiscoveryDocument", answer.json, `GET ${WELL_KNOWN_OXP_PATH}`);
      const info = (answer.json as { extension_info?: { search?: unknown } }).extension_info?.search;
      check(
        canonical(info) === canonical(SEARCH_INFO),
        `extension_info.search is ${truncate(canonical(info))}, expected ${canonical(SEARCH_INFO)}`,
      );
    },
  },
  {
    id: "search.query",
    section: "9.5",
    rules: ["search.query", "search.ranking", "extensions.applied-header"],
    level: "project",
    title:
      "q answers the tools that match a term, best first: a word of a tool's description finds it, a word none has finds nothing",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = toolsOf(await catalogOf(ctx));
      const byId = new Map(tools.map((tool) => [tool.id, tool]));
      for (const tool of spread(tools, 5)) {
        const term = rareWord(tool, tools) ?? searchTokens(partsOf(tool).tool)[0];
        if (term === undefined) {
          continue;
        }
        const { items, first } = await walkSearch(ctx, { q: term }, SEARCH_INFO.max_limit, pagesFor(tools.length, 50));
        const what = first.what;
        checkApplied(first.answer, what);
        items.forEach((item, place) => {
          const previous = items[place - 1];
          check(
            previous === undefined || previous.score >= item.score,
            `${what} ranks ${item.id} (score ${item.score}) below ${previous?.id} (score ${previous?.score}): not best first`,
          );
          check(
            item.toolkit === toolkitOf(item as ToolDefinition),
            `${what} gives ${item.id} the toolkit ${item.toolkit}`,
          );
          const listed = byId.get(item.id);
          check(listed !== undefined, `${what} answers ${item.id}, which GET ${TOOLS_PATH} does not list`);
          check(
            searchableText(listed).includes(term),
            `${what} answers ${item.id}, which has no word beginning with '${term}'`,
          );
        });
        const found = new Set(items.map((item) => item.id));
        check(found.has(tool.id), `${what} does not find ${tool.id}, whose description has '${term}'`);
        const missed = tools.filter((other) => !found.has(other.id) && begins(surelySearched(other), term));
        check(
          missed.length === 0,
          `${what} leaves out ${missed
            .slice(0, 3)
            .map((other) => other.id)
            .join(", ")}, whose name, toolkit, description or parameters have a word beginning '${term}'`,
        );
      }
      const nothing = await search(ctx, { q: unknownWord(tools) });
      check(
        nothing.items.length === 0 && nothing.next_cursor === undefined,
        `${nothing.what}, a word no tool has, answered ${truncate(nothing.answer.text)}, not {"items": []}`,
      );
    },
  },
  {
    id: "search.pages",
    section: "9.5",
    rules: ["search.query"],
    level: "project",
    title: "limit and cursor walk every match once, in order; 10 by default; next_cursor exactly when more follow",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = toolsOf(await catalogOf(ctx));
      const term = broadTerm(tools);
      const whole = await walkSearch(ctx, { q: term }, SEARCH_INFO.max_limit, pagesFor(tools.length, 50));
      checkNoDuplicates(whole.items, `walking ${whole.first.what} by 50`);
      const matches = whole.items.length;
      const small = Math.max(1, Math.min(SEARCH_INFO.max_limit, Math.ceil(matches / 4)));
      const walked = await walkSearch(ctx, { q: term }, small, pagesFor(tools.length, small));
      const what = `walking ${walked.first.what} by ${small}`;
      checkNoDuplicates(walked.items, what);
      const [got, want] = [walked.items.map((item) => item.id), whole.items.map((item) => item.id)];
      const missing = want.filter((id) => !got.includes(id));
      check(missing.length === 0, `${what} leaves out ${missing.slice(0, 3).join(", ")}, found by pages of 50`);
      const parted = got.findIndex((id, place) => id !== want[place]);
      check(
        parted === -1 && got.length === want.length,
        `${what} gives ${got[parted] ?? "nothing more"} at place ${parted + 1}, where pages of 50 give ${want[parted]}`,
      );
      for (const [limit, size] of [
        [undefined, Math.min(DEFAULT_LIMIT, matches)],
        ["1", Math.min(1, matches)],
      ] as const) {
        const page = await search(ctx, { q: term, limit });
        check(
          page.items.length === size,
          `${page.what} has ${page.items.length} items, expected ${size} of ${matches}`,
        );
        check(
          (page.next_cursor !== undefined) === matches > size,
          `${page.what} ${page.next_cursor === undefined ? "has no" : "has a"} next_cursor, with ${matches - size} matches to follow`,
        );
      }
    },
  },
  {
    id: "search.view",
    section: "9.5",
    rules: ["search.view"],
    level: "project",
    title:
      "view=full (the default) gives each listed definition with its toolkit and score; view=summary leaves out schemas and requirements",
    async run(ctx) {
      needExtension(ctx, "search");
      const catalog = await catalogOf(ctx);
      const tools = toolsOf(catalog);
      const listed = new Map((catalog.annotated ?? tools).map((tool) => [tool.id, tool]));
      // The word most tools share, and tools named exactly: those with annotations and deprecations among them.
      for (const q of [broadTerm(tools), ...spread(tools, 3).map((tool) => tool.id)]) {
        const byDefault = await search(ctx, { q, limit: "50" });
        const full = await search(ctx, { q, limit: "50", view: "full" });
        check(
          canonical(full.items) === canonical(byDefault.items),
          `${full.what} answered otherwise than without a view`,
        );
        for (const item of full.items) {
          const want = listed.get(item.id);
          check(want !== undefined, `${full.what} answers ${item.id}, which GET ${TOOLS_PATH} does not list`);
          const got = asListed(item, catalog.annotated !== undefined);
          check(
            canonical(got) === canonical(want),
            `${full.what} gives ${item.id} otherwise than GET ${TOOLS_PATH}${catalog.annotated ? " with annotations" : ""} lists it: ${truncate(canonical(got))}, listed ${truncate(canonical(want))}`,
          );
        }
        const summary = await search(ctx, { q, limit: "50", view: "summary" });
        check(
          canonical(summary.items.map((item) => [item.id, item.score])) ===
            canonical(full.items.map((item) => [item.id, item.score])),
          `${summary.what} ranks otherwise than the full view: ${truncate(canonical(summary.items.map((item) => item.id)))}`,
        );
        summary.items.forEach((item, place) => {
          for (const field of ["input_schema", "output_schema", "requirements"]) {
            check(!(field in item), `${summary.what} gives ${item.id} with its ${field}`);
          }
          const {
            input_schema: _input,
            output_schema: _output,
            requirements: _requirements,
            ...rest
          } = full.items[place] as ToolSearchItem;
          check(
            canonical(item) === canonical(rest),
            `${summary.what} gives ${item.id} otherwise than the full view without its schemas: ${truncate(canonical(item))}`,
          );
        });
      }
    },
  },
  {
    id: "search.toolkit",
    section: "9.5",
    rules: ["search.compose", "pagination.toolkit-filter"],
    level: "project",
    title:
      "toolkit=Name keeps exactly the matches whose id starts with 'Name.'; an unknown one none; a bad name is a 400",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = toolsOf(await catalogOf(ctx));
      const q = broadTerm(tools);
      const maxPages = pagesFor(tools.length, 50);
      const all = (await walkSearch(ctx, { q }, 50, maxPages)).items;
      const toolkits = [...new Set(all.map((item) => item.toolkit))].slice(0, 3);
      const names = new Set(toolkits);
      for (const toolkit of toolkits.slice(0, 1)) {
        names.add(swapCase(toolkit));
        if (toolkit.length > 1) {
          names.add(toolkit.slice(0, -1));
        }
      }
      names.add("OxpConformanceNoSuchToolkit");
      for (const toolkit of names) {
        const { items, first } = await walkSearch(ctx, { q, toolkit }, 50, maxPages);
        const got = new Set(items.map((item) => item.id));
        const want = all.filter((item) => item.id.startsWith(`${toolkit}.`)).map((item) => item.id);
        const extra = [...got].filter((id) => !want.includes(id));
        check(extra.length === 0, `${first.what} answers ${extra.slice(0, 3).join(", ")}, not of toolkit ${toolkit}`);
        const missing = want.filter((id) => !got.has(id));
        check(missing.length === 0, `${first.what} leaves out ${missing.slice(0, 3).join(", ")}`);
      }
      const query = queryOf({ q, toolkit: "a.b" });
      const answer = await get(ctx, TOOLS_PATH, query, "search");
      check(answer.status === 400, `${described(TOOLS_PATH, query, "search")} answered ${answer.status}, not 400`);
      checkError(answer, 400);
    },
  },
  {
    id: "search.cursor",
    section: "9.5",
    rules: ["search.compose"],
    level: "project",
    title:
      "A search cursor gives the next matches for its q, toolkit and view; sent with others, or not made by the server, a 400",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = toolsOf(await catalogOf(ctx));
      const q = broadTerm(tools);
      const head = await search(ctx, { q, limit: "3" });
      const first = await search(ctx, { q, limit: "1" });
      if (first.next_cursor === undefined) {
        throw new Skip(`${first.what} gave no next_cursor (one match): no cursor to send`);
      }
      const cursor = first.next_cursor;
      const ids = (items: readonly ToolSearchItem[]) => items.map((item) => item.id).join(", ");
      const next = await search(ctx, { q, limit: "1", cursor });
      check(
        ids(next.items) === ids(head.items.slice(1, 2)),
        `${next.what} answered ${ids(next.items) || "nothing"}, where the second match is ${ids(head.items.slice(1, 2))}`,
      );
      // The cursor is bound to q, toolkit and view: another limit may follow it.
      const wider = await search(ctx, { q, limit: "2", cursor });
      check(
        ids(wider.items) === ids(head.items.slice(1, 3)),
        `${wider.what} answered ${ids(wider.items) || "nothing"}, where the next two matches are ${ids(head.items.slice(1, 3))}`,
      );
      const refused = async (params: Record<string, string>, why: string) => {
        const query = queryOf(params);
        const what = `${described(TOOLS_PATH, query, "search")} (${why})`;
        const answer = await get(ctx, TOOLS_PATH, query, "search");
        check(answer.status === 400, `${what} answered ${answer.status}, not 400: ${truncate(answer.text)}`);
        checkError(answer, 400);
        check(
          /search/i.test(errorText(answer)),
          `${what}: the 400 does not say to search again: ${truncate(answer.text)}`,
        );
      };
      const toolkit = (head.items[0] as ToolSearchItem).toolkit;
      await refused({ q: `${q} oxpconformance`, limit: "1", cursor }, "another q");
      await refused({ q, limit: "1", toolkit, cursor }, "a toolkit filter it was not made with");
      await refused({ q, limit: "1", view: "summary", cursor }, "another view");
      const filtered = await search(ctx, { q, limit: "1", toolkit });
      if (filtered.next_cursor !== undefined) {
        await refused({ q, limit: "1", cursor: filtered.next_cursor }, "without the toolkit filter it was made with");
      }
      const tampered = [[...cursor].reverse().join(""), cursor.slice(0, Math.floor(cursor.length / 2))];
      for (const other of ["oxp-conformance-not-a-cursor", "A".repeat(2000), ...tampered]) {
        if (other !== "" && other !== cursor) {
          await refused({ q, limit: "1", cursor: other }, "not made by the server");
        }
      }
    },
  },
  {
    id: "search.exact-first",
    section: "9.5",
    rules: ["search.exact-first"],
    level: "project",
    title: "A query equal to a tool's id, Toolkit.Tool, name or tool part, in any case, ranks the tools it names first",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = toolsOf(await catalogOf(ctx));
      const picked = spread(tools, 3);
      const versioned = [...versionsByTool(tools).values()].find((versions) => versions.length > 1) ?? [];
      for (const tool of [...picked, ...versioned.filter((version) => !picked.includes(version))]) {
        const { tool: name, qualified } = partsOf(tool);
        for (const q of [tool.id, `  ${qualified.toLowerCase()}  `, tool.name.toUpperCase(), name]) {
          if (q.trim().length > SEARCH_INFO.max_query_length || searchTokens(q).length > SEARCH_INFO.max_terms) {
            continue;
          }
          const named = namedBy(tools, q).map((other) => other.id);
          const page = await search(ctx, { q, limit: "50" });
          const first = page.items.slice(0, Math.min(named.length, 50)).map((item) => item.id);
          check(
            first.length === Math.min(named.length, 50) && first.every((id) => named.includes(id)),
            `${page.what} ranks ${first.join(", ") || "nothing"} first, not the tools it names: ${named.slice(0, 5).join(", ")}`,
          );
        }
      }
    },
  },
  {
    id: "search.deprecated",
    section: "9.5",
    rules: ["search.deprecated"],
    level: "project",
    title: "A deprecated version ranks below every version of its tool that is not deprecated",
    async run(ctx) {
      needExtension(ctx, "search");
      const catalog = await catalogOf(ctx);
      const tools = toolsOf(catalog);
      const deprecated = new Set<string>();
      const several = [...versionsByTool(tools)].filter(([, versions]) => versions.length > 1);
      if (catalog.annotated) {
        for (const tool of catalog.annotated) {
          if (tool.deprecation_message !== undefined) {
            deprecated.add(tool.id);
          }
        }
      } else {
        // Search items carry deprecation_message whatever the request asked for.
        for (const [qualified] of several) {
          for (const item of (await search(ctx, { q: qualified, limit: "50", view: "summary" })).items) {
            if (item.deprecation_message !== undefined) {
              deprecated.add(item.id);
            }
          }
        }
      }
      const mixed = several.filter(
        ([, versions]) =>
          versions.some((version) => deprecated.has(version.id)) &&
          versions.some((version) => !deprecated.has(version.id)),
      );
      if (mixed.length === 0) {
        notApplicable("no tool of the catalog has both a deprecated version and one that is not");
      }
      for (const [qualified, versions] of mixed.slice(0, 3)) {
        const { toolkit, tool } = partsOf(versions[0] as ToolDefinition);
        // Its exact name, and its words: neither names a version above another.
        for (const q of [qualified, [...searchTokens(toolkit), ...searchTokens(tool)].join(" ")]) {
          const { items, first } = await walkSearch(ctx, { q }, 50, pagesFor(tools.length, 50));
          const places = new Map(items.map((item, place) => [item.id, place]));
          for (const version of versions) {
            check(places.has(version.id), `${first.what} does not find ${version.id}`);
          }
          const lowestKept = Math.max(
            ...versions.filter((version) => !deprecated.has(version.id)).map((version) => places.get(version.id) ?? 0),
          );
          for (const version of versions.filter((entry) => deprecated.has(entry.id))) {
            check(
              (places.get(version.id) ?? 0) > lowestKept,
              `${first.what} ranks the deprecated ${version.id} at place ${(places.get(version.id) ?? 0) + 1}, above a version that is not deprecated (place ${lowestKept + 1})`,
            );
          }
        }
      }
    },
  },
  {
    id: "search.deterministic",
    section: "9.5",
    rules: ["search.deterministic"],
    level: "project",
    title: "The same query gives the same bytes; equal scores are ordered by id",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = toolsOf(await catalogOf(ctx));
      const q = broadTerm(tools);
      for (const params of [{ q, limit: "50" }, { q: (tools[0] as ToolDefinition).id }]) {
        const once = await search(ctx, params);
        for (let again = 0; again < 2; again++) {
          const repeated = await search(ctx, params);
          check(repeated.answer.text === once.answer.text, `${once.what} answered other bytes the second time`);
        }
      }
      const { items, first } = await walkSearch(ctx, { q }, 50, pagesFor(tools.length, 50));
      items.forEach((item, place) => {
        const previous = items[place - 1];
        check(
          previous === undefined || previous.score !== item.score || previous.id < item.id,
          `${first.what} ranks ${previous?.id} above ${item.id}, of the same score ${item.score}: not in id order`,
        );
      });
    },
  },
  {
    id: "search.bounds",
    section: "9.5",
    rules: ["search.bounds"],
    level: "project",
    title:
      "q of 1 to 256 characters and 32 terms, limit 1 to 50, view summary or full: outside them a 400 saying which",
    async run(ctx) {
      needExtension(ctx, "search");
      const cases: [Record<string, string>, RegExp][] = [
        [{ q: "" }, /quer|\bq\b/i],
        [{ q: "   " }, /quer|\bq\b/i],
        [{ q: "a".repeat(SEARCH_INFO.max_query_length + 1) }, /quer|\bq\b/i],
        [{ q: "w ".repeat(SEARCH_INFO.max_terms + 1) }, /quer|\bq\b|term/i],
        ...["0", "51", "-1", "1.5", "ten", ""].map((limit): [Record<string, string>, RegExp] => [
          { q: "x", limit },
          /limit/i,
        ]),
        ...["tiny", ""].map((view): [Record<string, string>, RegExp] => [{ q: "x", view }, /view/i]),
      ];
      for (const [params, which] of cases) {
        const query = queryOf(params);
        const what = described(TOOLS_PATH, query, "search");
        const answer = await get(ctx, TOOLS_PATH, query, "search");
        check(answer.status === 400, `${what} answered ${answer.status}, not 400`);
        checkError(answer, 400);
        check(which.test(errorText(answer)), `${what}: the 400 does not say what is wrong: ${truncate(answer.text)}`);
      }
      for (const params of [
        { q: ` ${"a".repeat(SEARCH_INFO.max_query_length)} ` },
        { q: "w ".repeat(SEARCH_INFO.max_terms), limit: "50" },
        { q: "x", limit: "1", view: "summary" },
        // A pattern is words to look up, never a pattern to run.
        { q: "(a+)+$ .* [x]{1,99} \\" },
      ]) {
        await search(ctx, params);
      }
    },
  },
  {
    id: "search.ids",
    section: "9.5",
    rules: ["search.ids", "tool-id.latest", "tool-id.major-shorthand"],
    level: "project",
    title: "ids=A,B answers exactly the tools named, in that order, each resolved as a tool_id and listed once",
    async run(ctx) {
      needExtension(ctx, "search");
      const catalog = await catalogOf(ctx);
      const tools = toolsOf(catalog);
      const byIds = async (ids: string, asked = "search") => {
        const query = `?ids=${ids.split(",").map(encodeURIComponent).join(",")}`;
        const what = described(TOOLS_PATH, query, asked);
        const answer = await get(ctx, TOOLS_PATH, query, asked);
        const list = listOf(answer, what);
        checkSchema("ToolListResponse", answer.json, what);
        check(!("next_cursor" in list), `${what} has a next_cursor`);
        return { what, answer, items: list.items };
      };
      const picked = spread(tools, 3);
      const order = [...picked.slice(1), picked[0] as ToolDefinition];
      const named = await byIds(order.map((tool) => tool.id).join(","));
      checkApplied(named.answer, named.what);
      checkSameTools(named.items, order, named.what);
      const [a, b = a] = picked as [ToolDefinition, ToolDefinition?];
      const twice = await byIds([a.id, a.id, b.id, a.id].join(","));
      checkSameTools(twice.items, a === b ? [a] : [a, b], twice.what);
      // Each id resolved as a call's tool_id is: no version the latest, `@x` exactly x.0.0.
      const byTool = [...versionsByTool(tools).values()];
      const single = byTool.find((versions) => versions.length === 1);
      const several = byTool.find((versions) => versions.length > 1);
      for (const versions of [single, several]) {
        if (versions === undefined) {
          continue;
        }
        const latest = latestOf(versions);
        const oldest = [...versions].sort((x, y) => compareToolVersions(x.version, y.version))[0] as ToolDefinition;
        const { qualified } = partsOf(latest);
        const asked: [string, ToolDefinition[]][] = [
          [qualified, [latest]],
          [`${oldest.id},${qualified}`, oldest === latest ? [latest] : [oldest, latest]],
          [`${qualified},${latest.id}`, [latest]],
        ];
        for (const version of versions.filter((entry) => /^[0-9]+\.0\.0$/.test(entry.version))) {
          asked.push([`${qualified}@${version.version.split(".")[0]}`, [version]]);
        }
        for (const [ids, want] of asked) {
          const answer = await byIds(ids);
          checkSameTools(answer.items, want, answer.what);
        }
      }
      if (catalog.annotated) {
        const annotated = new Map(catalog.annotated.map((tool) => [tool.id, tool]));
        const answer = await byIds(a.id, "search, annotations");
        checkSameTools(answer.items, [annotated.get(a.id) ?? a], answer.what);
      }
    },
  },
  {
    id: "search.ids.refused",
    section: "9.5",
    rules: ["search.ids"],
    level: "project",
    title: "ids naming no tool or not valid are a 400 naming them; so are more than 100 ids, no id, and ids with q",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = toolsOf(await catalogOf(ctx));
      const [tool] = tools as [ToolDefinition];
      const listed = new Set(tools.map((entry) => entry.id.split("@")[0]));
      const refused = async (query: string, names: readonly string[] = []) => {
        const what = described(TOOLS_PATH, query, "search");
        const answer = await get(ctx, TOOLS_PATH, query, "search");
        check(answer.status === 400, `${what} answered ${answer.status}, not 400: ${truncate(answer.text)}`);
        checkError(answer, 400);
        for (const name of names) {
          check(errorText(answer).includes(name), `${what}: the 400 does not name '${name}': ${truncate(answer.text)}`);
        }
      };
      const { qualified } = partsOf(tool);
      await refused(`?ids=${encodeURIComponent(tool.id)},OxpConformance.NoSuchTool`, ["OxpConformance.NoSuchTool"]);
      await refused(`?ids=${encodeURIComponent(tool.id)},not%20an%20id`, ["not an id"]);
      await refused(`?ids=${encodeURIComponent(`${qualified}@987654.0.0`)}`, [`${qualified}@987654.0.0`]);
      if (!listed.has(qualified.toLowerCase())) {
        await refused(`?ids=${encodeURIComponent(qualified.toLowerCase())}`, [qualified.toLowerCase()]);
      }
      await refused(
        `?ids=${Array(SEARCH_INFO.max_ids + 1)
          .fill(encodeURIComponent(tool.id))
          .join(",")}`,
      );
      await refused("?ids=");
      await refused(`?ids=${encodeURIComponent(tool.id)}&q=${encodeURIComponent(partsOf(tool).tool)}`);
      const most = `?ids=${Array(SEARCH_INFO.max_ids).fill(encodeURIComponent(tool.id)).join(",")}`;
      const answer = await get(ctx, TOOLS_PATH, most, "search");
      const what = described(TOOLS_PATH, most, "search");
      checkSameTools(listOf(answer, what).items, [tool], what);
    },
  },
  {
    id: "search.toolkits",
    section: "9.5",
    rules: ["search.toolkits"],
    level: "project",
    title: "GET /toolkits lists each toolkit of the catalog once, by name, with how many tools it has",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = (await catalogOf(ctx)).plain;
      const what = described(TOOLKITS_PATH, "", "search");
      const answer = await get(ctx, TOOLKITS_PATH, "", "search");
      check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
      checkSchema("ToolkitListResponse", answer.json, what);
      checkApplied(answer, what);
      const { items } = answer.json as ToolkitListResponse;
      items.forEach((item, place) => {
        const previous = items[place - 1];
        check(
          previous === undefined || previous.name < item.name,
          `${what} lists ${item.name} after ${previous?.name}: not by name, each once`,
        );
      });
      const counts = new Map<string, number>();
      for (const qualified of versionsByTool(tools).keys()) {
        const toolkit = qualified.split(".")[0] ?? qualified;
        counts.set(toolkit, (counts.get(toolkit) ?? 0) + 1);
      }
      for (const [name, count] of counts) {
        const item = items.find((entry) => entry.name === name);
        check(item !== undefined, `${what} leaves out the toolkit ${name}`);
        check(
          item.tool_count === count,
          `${what} gives ${name} ${item.tool_count} tools, where GET ${TOOLS_PATH} lists ${count} (versions of one tool count once)`,
        );
      }
      const extra = items.filter((item) => !counts.has(item.name)).map((item) => item.name);
      check(extra.length === 0, `${what} lists toolkits GET ${TOOLS_PATH} has no tool of: ${extra.join(", ")}`);
    },
  },
  {
    id: "search.toolkits.off",
    section: "9.5",
    rules: ["search.toolkits", "extensions.off-without-header", "endpoints.unknown-route"],
    level: "project",
    title: `Without search asked for, GET /toolkits is a 404, as any path the server does not serve`,
    async run(ctx) {
      needExtension(ctx, "search");
      const others = [...ctx.extensions.filter((id) => id !== "search"), "oxp-conformance-unknown"].join(", ");
      for (const asked of [undefined, others]) {
        const answer = await get(ctx, TOOLKITS_PATH, "", asked);
        const what = described(TOOLKITS_PATH, "", asked);
        check(answer.status === 404, `${what} answered ${answer.status}, not 404: ${truncate(answer.text)}`);
        checkError(answer, 404);
      }
    },
  },
  {
    id: "search.off",
    section: "9.5",
    rules: ["search.ignored-without-header", "endpoints.lenient-get"],
    level: "project",
    title: "Without search asked for, q, ids and view are ignored: GET /tools answers as it would without them",
    async run(ctx) {
      needExtension(ctx, "search");
      const tools = (await catalogOf(ctx)).plain;
      const queries = [
        queryOf({ q: tools.length > 0 ? broadTerm(tools) : "x" }),
        queryOf({ q: "" }),
        queryOf({ view: "summary" }),
        queryOf({ q: "x", view: "tiny" }),
        ...(tools[0] ? [queryOf({ ids: tools[0].id })] : []),
        queryOf({ ids: "OxpConformance.NoSuchTool" }),
      ];
      const shapers = ctx.extensions.filter((id) => LIST_SHAPERS.includes(id)).join(", ");
      for (const asked of shapers === "" ? [undefined] : [undefined, shapers]) {
        const base = await get(ctx, TOOLS_PATH, "", asked);
        listOf(base, described(TOOLS_PATH, "", asked));
        for (const query of queries) {
          const answer = await get(ctx, TOOLS_PATH, query, asked);
          const what = described(TOOLS_PATH, query, asked);
          check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
          check(
            answer.text === base.text,
            `${what} answered otherwise than without its query: ${truncate(answer.text)}`,
          );
        }
      }
    },
  },
];
