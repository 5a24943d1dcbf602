// ToolSearchIndex held to what it stands in for: MiniSearch 7.2 configured as docs/protocol.md 9.5 ranks, the index's
// own cuts (`search`'s full list against `page`'s) and its ASCII tokenizer against the Unicode one.
import { readFileSync } from "node:fs";
import { parseToolId, type ToolDefinition } from "@otc/types";
import MiniSearch from "minisearch";
import { describe, expect, it } from "vitest";
import { FIELD_WEIGHTS, queryTokens, searchTokens, type ToolMatch, ToolSearchIndex } from "./tool-search.js";

/** The published tools of tests/search-eval's catalog and its labelled queries: real text, 969 tools. */
const FIXTURES = new URL("../../../../tests/search-eval/fixtures/", import.meta.url);
const published = (
  JSON.parse(readFileSync(new URL("catalog.json", FIXTURES), "utf8")) as { sources: { tools: ToolDefinition[] }[] }
).sources.flatMap((source) => source.tools);
const labelled = (
  JSON.parse(readFileSync(new URL("queries.json", FIXTURES), "utf8")) as { queries: { query: string }[] }
).queries.map(({ query }) => query);

/**
 * The ranking as MiniSearch computes it, per query (what the index replaced: bench/results/notes.md): the same
 * fields, boosts, prefix weight and tokenizer, then the same rounding, demotion of deprecated versions, exact names
 * first and ties by id.
 */
function reference(
  definitions: readonly ToolDefinition[],
): (query: string, toolkit?: string, visible?: ReadonlySet<string>) => ToolMatch[] {
  const fields = Object.keys(FIELD_WEIGHTS) as (keyof typeof FIELD_WEIGHTS)[];
  const engine = new MiniSearch<Record<string, string | number>>({
    idField: "index",
    fields,
    tokenize: searchTokens,
    processTerm: (term) => term,
    searchOptions: {
      // A query is searched by its tokens but the stopwords; the catalog is indexed by all of its.
      tokenize: queryTokens,
      boost: { ...FIELD_WEIGHTS },
      prefix: true,
      fuzzy: false,
      combineWith: "OR",
      weights: { prefix: 0.3, fuzzy: 0 },
    },
  });
  // A match scores at least 2e-4, a demoted version at least 1e-4: halving the least still ranks it below.
  const round = (score: number, least = 2e-4) => Math.max(least, Math.round(score * 1e4) / 1e4);
  const qualified = (definition: ToolDefinition) => parseToolId(definition.id)?.qualifiedName ?? definition.id;
  engine.addAll(
    definitions.map((definition, index) => {
      const names: string[] = [];
      const texts: string[] = [];
      const read = (schema: unknown, depth: number): void => {
        if (depth >= 4 || typeof schema !== "object" || schema === null) {
          return;
        }
        const { properties, items } = schema as { properties?: Record<string, unknown>; items?: unknown };
        for (const [name, property] of Object.entries(properties ?? {})) {
          names.push(name);
          const { description, enum: values } = (property ?? {}) as { description?: unknown; enum?: unknown[] };
          if (typeof description === "string") {
            texts.push(description);
          }
          if (Array.isArray(values)) {
            texts.push(...values.filter((value) => typeof value === "string"));
          }
          read(property, depth + 1);
        }
        read(items, depth + 1);
      };
      read(definition.input_schema, 0);
      const parsed = parseToolId(definition.id);
      return {
        index,
        name: parsed?.tool ?? definition.name,
        toolkit: parsed?.toolkit ?? "",
        description: definition.description,
        parameters: names.join(" "),
        parameterText: texts.join(" "),
      };
    }),
  );
  return (query, toolkit, visible) => {
    const keep = (index: number) =>
      (toolkit === undefined || definitions[index]?.id.startsWith(`${toolkit}.`) === true) &&
      (visible === undefined || visible.has(definitions[index]?.id as string));
    const scores = new Map<number, number>();
    for (const result of engine.search(query)) {
      if (keep(result.id as number)) {
        scores.set(result.id as number, round(result.score));
      }
    }
    for (const [index, score] of [...scores]) {
      const definition = definitions[index] as ToolDefinition;
      if (definition.deprecation_message === undefined) {
        continue;
      }
      let floor = Number.POSITIVE_INFINITY;
      definitions.forEach((other, place) => {
        if (other.deprecation_message === undefined && qualified(other) === qualified(definition) && keep(place)) {
          floor = Math.min(floor, scores.get(place) ?? Number.POSITIVE_INFINITY);
        }
      });
      if (floor !== Number.POSITIVE_INFINITY && score >= floor) {
        scores.set(index, round(floor / 2, 1e-4));
      }
    }
    const folded = query.trim().toLowerCase();
    const named = definitions.flatMap((definition, index) => {
      const parsed = parseToolId(definition.id);
      const spellings = [definition.id, qualified(definition), definition.name, parsed?.tool ?? definition.name];
      return keep(index) && spellings.some((name) => name.toLowerCase() === folded) ? [index] : [];
    });
    const top = Math.max(1, ...scores.values());
    for (const index of named) {
      scores.set(index, round(top + 1 + (scores.get(index) ?? 0)));
    }
    return [...scores]
      .map(([index, score]) => ({ definition: definitions[index] as ToolDefinition, score }))
      .sort(
        (a, b) =>
          b.score - a.score || (a.definition.id < b.definition.id ? -1 : a.definition.id > b.definition.id ? 1 : 0),
      );
  };
}

/** Each result as `id score`, scores to the 4 decimals both round to: the tolerance is for their last bits. */
function expectSameRanking(ours: readonly ToolMatch[], theirs: readonly ToolMatch[], query: string): void {
  expect(ours.length, query).toBe(theirs.length);
  // Best first, and equal scores by id (`[search.deterministic]`).
  for (let i = 1; i < ours.length; i++) {
    const [a, b] = [ours[i - 1] as ToolMatch, ours[i] as ToolMatch];
    expect(a.score > b.score || (a.score === b.score && a.definition.id < b.definition.id), `${query}: #${i}`).toBe(
      true,
    );
  }
  ours.forEach((match, i) => {
    const other = theirs[i] as ToolMatch;
    if (match.definition.id !== other.definition.id) {
      // Only two tools whose scores round alike may come in another order.
      expect(Math.abs(match.score - other.score), `${query}: #${i} ${match.definition.id}`).toBeLessThanOrEqual(1e-4);
    }
    expect(Math.abs(match.score - other.score), `${query}: #${i}`).toBeLessThanOrEqual(2e-4);
  });
}

/**
 * A catalog made to reach every path of the index: common words in most tools (`a`, `the`, `to` above the share that
 * has its impacts summed at build), a rare word in a few, deprecated versions among both, toolkits of every size.
 */
function generated(count: number): ToolDefinition[] {
  const verbs = ["send", "list", "create", "delete", "update", "get", "search", "archive"];
  const objects = ["email", "message", "contact", "invoice", "event", "file", "issue", "payment", "page"];
  const kits = ["Gmail", "Slack", "Stripe", "Notion", "GitHub", "Calendar", "Drive"];
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)] as T;
  const definitions: ToolDefinition[] = [];
  for (let i = 0; definitions.length < count; i++) {
    const verb = pick(verbs);
    const object = pick(objects);
    const kit = i % 11 === 0 ? "Tiny" : pick(kits);
    const name = `${verb[0]?.toUpperCase()}${verb.slice(1)}${object[0]?.toUpperCase()}${object.slice(1)}${i}`;
    const deprecated = i % 17 === 0;
    for (const version of deprecated ? ["1.0.0", "2.0.0"] : ["1.0.0"]) {
      definitions.push({
        id: `${kit}.${name}@${version}`,
        name: `${kit}_${name}`,
        description: `${verb} a ${object} to the ${pick(objects)}${random() < 0.1 ? " with a zebra" : ""}.`,
        version,
        input_schema: {
          type: "object",
          properties: { [`${object}_id`]: { type: "string", description: `The ${object} to ${verb}.` } },
        },
        output_schema: { type: "object" },
        ...(deprecated && version === "1.0.0" ? { deprecation_message: "Use 2.0.0." } : {}),
      } as unknown as ToolDefinition);
    }
  }
  return definitions;
}

const CATALOGS = [
  { name: "the published tools", definitions: published, queries: labelled },
  {
    name: "a generated catalog of common words",
    definitions: generated(2_000),
    queries: [
      "send a message to the contact",
      "a",
      "the email",
      "zebra",
      "a zebra",
      "create an invoice",
      "Gmail.SendEmail17",
      "SendEmail17",
      "archive the page to a file",
      "to the a",
      "send send email email",
    ],
  },
];

describe.each(CATALOGS)("ToolSearchIndex over $name", ({ definitions, queries }) => {
  const index = new ToolSearchIndex(definitions);
  const ranked = reference(definitions);

  it("ranks every query as MiniSearch does, each tool with the same score", () => {
    expect(queries.length).toBeGreaterThan(10);
    for (const query of queries) {
      expectSameRanking(index.search(query), ranked(query), query);
    }
  });

  it("ranks within a toolkit as MiniSearch does", () => {
    for (const query of queries.slice(0, 40)) {
      for (const toolkit of ["Gmail", "Tiny", "Everything", "Nope"]) {
        expectSameRanking(index.search(query, { toolkit }), ranked(query, toolkit), `${query} in ${toolkit}`);
      }
    }
  });

  it("cuts pages out of the whole ranking, to the byte, and says when more follow", () => {
    for (const query of queries) {
      const all = index.search(query);
      for (const [offset, limit] of [
        [0, 1],
        [0, 10],
        [3, 7],
        [10, 10],
        [40, 50],
      ] as const) {
        const page = index.page(query, { offset, limit });
        expect(page.matches, `${query} ${offset}+${limit}`).toEqual(all.slice(offset, offset + limit));
        expect(page.more, `${query} ${offset}+${limit}`).toBe(all.length > offset + limit);
      }
    }
  });

  it("leaves out what the caller's filter does not keep: they neither match nor weigh on the others' ranks", () => {
    // Every third tool hidden, and every deprecated version's replacement: nothing to put it below then.
    const visible = new Set(
      definitions.filter((definition, i) => i % 3 !== 0 && !/@2\.0\.0$/.test(definition.id)).map(({ id }) => id),
    );
    const keep = (definition: ToolDefinition) => visible.has(definition.id);
    for (const query of queries.slice(0, 60)) {
      const all = ranked(query, undefined, visible);
      expectSameRanking(index.search(query, { keep }), all, `${query}, filtered`);
      const page = index.page(query, { offset: 0, limit: 10, keep });
      expect(page.matches, query).toEqual(index.search(query, { keep }).slice(0, 10));
      expect(page.more, query).toBe(all.length > 10);
    }
  });
});

/** A tool of toolkit K with only a name and a description to be found by. */
const tool = (name: string, description: string): ToolDefinition =>
  ({
    id: `K.${name}@1.0.0`,
    name: `K_${name}`,
    description,
    version: "1.0.0",
    input_schema: { type: "object", properties: {} },
    output_schema: { type: "object" },
  }) as unknown as ToolDefinition;

describe("ToolSearchIndex with long queries", () => {
  it("counts every distinct term of a query of any length: 300 of them, one tool with 256", () => {
    // Letters only (a digit would be a term of its own): qaa, qab, ...
    const letter = (n: number) => String.fromCharCode(97 + n);
    const words = Array.from({ length: 300 }, (_, i) => `q${letter(Math.floor(i / 26))}${letter(i % 26)}`);
    const definitions = [
      tool("All", words.join(" ")),
      tool("Most", words.slice(0, 256).join(" ")),
      tool("Few", words.slice(0, 10).join(" ")),
      ...Array.from({ length: 200 }, (_, i) => tool(`Other${i}`, "nothing of the kind")),
    ];
    const index = new ToolSearchIndex(definitions);
    const query = words.join(" ");
    const all = index.search(query);
    expectSameRanking(all, reference(definitions)(query), "300 terms");
    expect(all.map(({ definition }) => definition.name)).toEqual(["K_All", "K_Most", "K_Few"]);
    expect(index.page(query, { offset: 0, limit: 2 }).matches).toEqual(all.slice(0, 2));
  });
});

describe("ToolSearchIndex at the least score", () => {
  it("ranks a deprecated version below its tool's other one even when that one scores the least", () => {
    // A word in every tool, found only as a prefix (`zzz` of `zzzzzzzz`), scores next to nothing: 3,000 tools, and
    // a deprecated version of one of them.
    const tool = (name: string, version: string, deprecated = false): ToolDefinition =>
      ({
        id: `K.${name}@${version}`,
        name: `K_${name}`,
        description: "A tool.",
        version,
        input_schema: { type: "object", properties: { p: { type: "string", description: "zzzzzzzz" } } },
        output_schema: { type: "object" },
        ...(deprecated ? { deprecation_message: "Use 2.0.0." } : {}),
      }) as unknown as ToolDefinition;
    const definitions = [
      tool("Target", "1.0.0", true),
      tool("Target", "2.0.0"),
      ...Array.from({ length: 2_998 }, (_, i) => tool(`T${i}`, "1.0.0")),
    ];
    const found = new ToolSearchIndex(definitions)
      .search("zzz")
      .filter(({ definition }) => definition.name === "K_Target");
    expect(found.map(({ definition }) => definition.id)).toEqual(["K.Target@2.0.0", "K.Target@1.0.0"]);
    const [current, deprecated] = found.map(({ score }) => score) as [number, number];
    expect(current).toBe(2e-4);
    expect(deprecated).toBe(1e-4);
  });
});

describe("ToolSearchIndex and a query's stopwords", () => {
  const definitions = [
    tool("Wordy", "Sends a note to the one on the list, for the team, with the text it is given."),
    tool("Mail", "Sends mail."),
    ...Array.from({ length: 20 }, (_, i) => tool(`Other${i}`, `Reads record ${i}.`)),
  ];
  const index = new ToolSearchIndex(definitions);
  const names = (query: string) => index.search(query).map(({ definition }) => definition.name);

  it("searches a query by its words but the stopwords: they neither find tools nor rank them", () => {
    expect(queryTokens("Send an email to the team")).toEqual(["send", "email", "team"]);
    // Without the stopwords' matches, the tool that says "mail" is not outranked by the one that says "to the".
    expect(names("send mail to the list")).toEqual(names("send mail list"));
    expect(index.search("send mail to the list")).toEqual(index.search("send mail list"));
    expect(names("the of")).toEqual(["K_Wordy"]);
  });

  it("searches a query of stopwords alone by them", () => {
    expect(queryTokens("to the")).toEqual(["to", "the"]);
    expect(names("it")).toEqual(["K_Wordy"]);
  });
});

describe("searchTokens", () => {
  it("cuts ASCII text as the Unicode rules do", () => {
    const texts = published.flatMap((definition) => [
      definition.id,
      definition.name,
      definition.description,
      JSON.stringify(definition.input_schema),
    ]);
    texts.push("SendEmail_v2", "HTTPServer2Go", "a1b2C3dD", "XMLHttpRequest", "__init__", "ABC", "aB", "9lives");
    for (const text of texts) {
      // A letter outside ASCII sends the text down the Unicode path: the same tokens, and its own last.
      expect([...searchTokens(text), "e"], text).toEqual(searchTokens(`${text} é`));
    }
  });
});
