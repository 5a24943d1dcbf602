/** @otc/ai's `server` loading (docs/protocol.md 9.5): one search tool backed by the server's search, and the definitions it loads, for every framework's adapter. */
import { type OxpClient, OxpExtensionUnavailableError, type ToolSearchSummary } from "@otc/client";
import { parseToolId, type ToolDefinition } from "@otc/types";
import {
  callContext,
  isModelName,
  type OxpToolSpec,
  type OxpToolsOptions,
  type ToolSpecParts,
  toolSpec,
} from "./core.js";

/** The name the model calls the search tool by. */
export const SEARCH_TOOL_NAME = "search_tools";

/** How many matches a search lists and loads when `searchLimit` is not given. */
const DEFAULT_SEARCH_LIMIT = 5;
/** The most matches one `GET /tools?q=` answers (docs/protocol.md 9.5's `limit`). */
const MAX_SEARCH_LIMIT = 50;
/** The most toolkits the search tool's description names: a catalog of thousands would fill the model's context. */
const DESCRIBED_TOOLKITS = 40;

/** One tool a search found, as the model reads it: it is loaded, and callable by `name` on the next step. */
export interface OxpFoundTool {
  /** The OXP tool id, with the version loaded. */
  id: string;
  /** The name the model calls it by. */
  name: string;
  description: string;
  toolkit: string;
  /** The server's relevance score: higher is better. */
  score: number;
}

/** What the search tool answers the model: the tools found (each now loaded), best first, and what to do next. */
export interface OxpToolSearchResult {
  tools: OxpFoundTool[];
  message: string;
}

/**
 * How a search ended: its result (as JSON text too) and the tools it loaded, or, for an input the model should
 * correct (no query, an unknown toolkit, a query the server refused), the text that says so.
 */
export type OxpToolSearchOutcome =
  | { kind: "value"; result: OxpToolSearchResult; text: string; loaded: OxpToolSpec[] }
  | { kind: "invalid-input"; text: string };

/** The search tool as the model sees it. */
export interface OxpSearchToolSpec {
  name: typeof SEARCH_TOOL_NAME;
  description: string;
  /** Its input's JSON Schema: a `query`, and optionally a `toolkit`. */
  inputSchema: Record<string, unknown>;
}

/** Options of one search or load. */
export interface OxpToolLoadOptions {
  signal?: AbortSignal;
}

/**
 * The tools of a server that `loading: "server"` hands out: a search tool, and the definitions its searches (or the
 * model's calls to tools not loaded yet) loaded. What is loaded stays loaded for the loader's life: at most the
 * catalog (or the part of it the options select).
 */
export interface OxpToolLoader {
  readonly searchTool: OxpSearchToolSpec;
  /** Runs the search tool: `GET /tools?q=` in the summary view, then `GET /tools?ids=` for the matches not loaded yet. */
  search(input: unknown, options?: OxpToolLoadOptions): Promise<OxpToolSearchOutcome>;
  /**
   * The tool the model calls `name`: the one loaded, or the server's tool of that name (found by a search, whose exact
   * name match ranks first), loaded now. Undefined when the server has none of that name among the tools selected.
   */
  load(name: string, options?: OxpToolLoadOptions): Promise<OxpToolSpec | undefined>;
  /** Whether the tool the model calls `name` is loaded. */
  isLoaded(name: string): boolean;
  /** The tools loaded so far, in the order they were loaded. */
  loaded(): OxpToolSpec[];
}

/**
 * The `server` loading of {@link OxpToolsOptions.loading}, for a framework without an adapter here: checks that the
 * server offers the search extension (an OxpExtensionUnavailableError otherwise), that the toolkits and tools the
 * options select exist, and answers the {@link OxpToolLoader}.
 *
 * @example
 * const loader = await oxpToolLoader(client);
 * const found = await loader.search({ query: "add two numbers" });
 * if (found.kind === "value") for (const spec of found.loaded) console.log(spec.name); // Calculator_Add
 */
export async function oxpToolLoader(client: OxpClient, options: OxpToolsOptions = {}): Promise<OxpToolLoader> {
  const { signal } = options;
  const limit = searchLimitOf(options.searchLimit);
  // Discovery says whether the server offers search; without it, a search tool would only ever fail in the run.
  if (!(await client.discover({ signal })).extensions.includes("search")) {
    throw new OxpExtensionUnavailableError("search", 'oxpTools with loading: "server"');
  }
  const toolkits = await client.listToolkits({ signal });
  const listed = new Set(toolkits.map((toolkit) => toolkit.name));
  const unknown = (options.toolkits ?? []).filter((toolkit) => !listed.has(toolkit));
  if (unknown.length > 0) {
    throw new Error(`The server lists no toolkit ${unknown.map((toolkit) => JSON.stringify(toolkit)).join(", ")}`);
  }
  // The tools named are fetched now: an unknown id is the server's 400 (naming it) here rather than in the run.
  const selectors = options.tools ?? [];
  const named = await client.getTools(selectors, { annotations: true, signal });
  const pinned = new Set(named.map((definition) => qualifiedNameOf(definition.id)));
  const narrowed = options.tools !== undefined || options.toolkits !== undefined;
  const allowed = narrowed
    ? new Set([...(options.toolkits ?? []), ...[...pinned].map((name) => name.slice(0, name.indexOf(".")))])
    : listed;
  const described = toolkits.filter((toolkit) => allowed.has(toolkit.name));
  return new ToolLoader({
    client,
    limit,
    narrowed,
    toolkits: allowed,
    pinned,
    fetched: new Map(named.map((definition) => [qualifiedNameOf(definition.id), definition])),
    parts: { client, approval: options.approval ?? "destructive", context: callContext(options) },
    searchTool: searchToolSpec(limit, described, narrowed),
  });
}

/** The `searchLimit` option, checked: a whole number from 1 to 50 (default 5), or a RangeError. */
function searchLimitOf(limit: number | undefined): number {
  if (limit === undefined) {
    return DEFAULT_SEARCH_LIMIT;
  }
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) {
    throw new RangeError(`searchLimit is a whole number from 1 to ${MAX_SEARCH_LIMIT} (got ${JSON.stringify(limit)})`);
  }
  return limit;
}

function searchToolSpec(
  limit: number,
  toolkits: readonly { name: string; description?: string }[],
  narrowed: boolean,
): OxpSearchToolSpec {
  const shown = toolkits
    .slice(0, DESCRIBED_TOOLKITS)
    .map(({ name, description }) => (description === undefined ? name : `${name} (${description})`));
  const more = toolkits.length > shown.length ? `, and ${toolkits.length - shown.length} more` : "";
  return {
    name: SEARCH_TOOL_NAME,
    description: [
      `Finds the tools that can do a task, best first, and loads the best ${limit} so that you can call them by name on your next step.`,
      'Describe the task in a few words (query: "send an email", "add two numbers"); toolkit narrows the search to one toolkit.',
      ...(shown.length > 0 ? [`Toolkits: ${shown.join("; ")}${more}.`] : []),
    ].join(" "),
    inputSchema: {
      type: "object",
      properties: {
        query: {
          type: "string",
          minLength: 1,
          maxLength: 256,
          description: "What the tool should do, in a few words.",
        },
        toolkit: {
          type: "string",
          description: "Only the tools of this toolkit.",
          // A narrowed selection is small by nature; the whole catalog's toolkits would not be.
          ...(narrowed && toolkits.length > 0 ? { enum: toolkits.map((toolkit) => toolkit.name) } : {}),
        },
      },
      required: ["query"],
    },
  };
}

interface ToolLoaderParts {
  client: OxpClient;
  limit: number;
  /** Whether `tools` or `toolkits` narrow what a search may find. */
  narrowed: boolean;
  /** The toolkits a search may name. */
  toolkits: ReadonlySet<string>;
  /** The qualified names of the tools the options name. */
  pinned: ReadonlySet<string>;
  /** Definitions fetched but not made specs yet, by qualified name: those the options name, in the version they pin. */
  fetched: Map<string, ToolDefinition>;
  parts: Omit<ToolSpecParts, "name">;
  searchTool: OxpSearchToolSpec;
}

class ToolLoader implements OxpToolLoader {
  readonly searchTool: OxpSearchToolSpec;
  private readonly byName = new Map<string, OxpToolSpec>();
  private readonly byQualifiedName = new Map<string, OxpToolSpec>();
  /** The qualified name of each tool name a search answered: a later call by name needs no search. */
  private readonly seen = new Map<string, string>();
  private readonly pending = new Map<string, Promise<OxpToolSpec | undefined>>();

  constructor(private readonly state: ToolLoaderParts) {
    this.searchTool = state.searchTool;
  }

  async search(input: unknown, { signal }: OxpToolLoadOptions = {}): Promise<OxpToolSearchOutcome> {
    const asked = searchInput(input);
    if (typeof asked === "string") {
      return { kind: "invalid-input", text: asked };
    }
    const { toolkits, limit, narrowed } = this.state;
    if (asked.toolkit !== undefined && !toolkits.has(asked.toolkit)) {
      const names = [...toolkits].slice(0, DESCRIBED_TOOLKITS).join(", ");
      return {
        kind: "invalid-input",
        text: `Error: there is no toolkit ${JSON.stringify(asked.toolkit)} to search; the toolkits: ${names}.`,
      };
    }
    const toolkit = asked.toolkit ?? this.onlyToolkit();
    let items: ToolSearchSummary[];
    try {
      // More than `limit` asked for: a tool's versions come one by one, and a narrowed selection drops some.
      const wanted = narrowed && toolkit === undefined ? MAX_SEARCH_LIMIT : Math.min(MAX_SEARCH_LIMIT, limit * 2);
      ({ items } = await this.state.client.searchTools(asked.query, {
        view: "summary",
        limit: wanted,
        ...(toolkit === undefined ? {} : { toolkit }),
        signal,
      }));
    } catch (error) {
      if (isRefusal(error)) {
        return { kind: "invalid-input", text: `Error: the server refused the search: ${error.message}` };
      }
      throw error;
    }
    const hits = firstOfEachTool(items.filter((item) => this.selects(item))).slice(0, limit);
    for (const hit of hits) {
      this.seen.set(hit.name, qualifiedNameOf(hit.id));
    }
    const specs = await this.loadAll(
      hits.map((hit) => qualifiedNameOf(hit.id)),
      signal,
    );
    const found = hits.flatMap((hit) => {
      const spec = specs.get(qualifiedNameOf(hit.id));
      return spec === undefined ? [] : [{ hit, spec }];
    });
    const where = toolkit === undefined ? "" : ` in the toolkit ${toolkit}`;
    const result: OxpToolSearchResult = {
      tools: found.map(({ hit, spec }) => ({
        id: spec.definition.id,
        name: spec.name,
        description: spec.description,
        toolkit: hit.toolkit,
        score: hit.score,
      })),
      message:
        found.length === 0
          ? `No tool matches ${JSON.stringify(asked.query)}${where}: search again with other words${toolkit === undefined ? "" : ", or without the toolkit"}.`
          : "Each tool found is loaded: call it by its name on your next step.",
    };
    return { kind: "value", result, text: JSON.stringify(result), loaded: found.map(({ spec }) => spec) };
  }

  load(name: string, { signal }: OxpToolLoadOptions = {}): Promise<OxpToolSpec | undefined> {
    const spec = this.byName.get(name);
    if (spec !== undefined) {
      return Promise.resolve(spec);
    }
    if (!isModelName(name) || name === SEARCH_TOOL_NAME) {
      return Promise.resolve(undefined);
    }
    // Parallel calls to one tool not loaded yet make one load.
    let loading = this.pending.get(name);
    if (loading === undefined) {
      loading = this.loadByName(name, signal).finally(() => this.pending.delete(name));
      this.pending.set(name, loading);
    }
    return loading;
  }

  isLoaded(name: string): boolean {
    return this.byName.has(name);
  }

  loaded(): OxpToolSpec[] {
    return [...this.byName.values()];
  }

  private async loadByName(name: string, signal: AbortSignal | undefined): Promise<OxpToolSpec | undefined> {
    const qualifiedName = this.seen.get(name) ?? (await this.find(name, signal));
    if (qualifiedName === undefined) {
      return undefined;
    }
    const spec = (await this.loadAll([qualifiedName], signal)).get(qualifiedName);
    return spec?.name === name ? spec : undefined;
  }

  /** The qualified name of the tool called `name`, by a search for it: the server ranks an exact name match first. */
  private async find(name: string, signal: AbortSignal | undefined): Promise<string | undefined> {
    const toolkit = this.onlyToolkit();
    try {
      const { items } = await this.state.client.searchTools(name, {
        view: "summary",
        limit: 10,
        ...(toolkit === undefined ? {} : { toolkit }),
        signal,
      });
      const hit = items.find((item) => item.name === name && this.selects(item));
      return hit === undefined ? undefined : qualifiedNameOf(hit.id);
    } catch (error) {
      if (isRefusal(error)) {
        return undefined;
      }
      throw error;
    }
  }

  /** The specs of these tools, loading those not loaded yet with one `GET /tools?ids=`. */
  private async loadAll(qualifiedNames: readonly string[], signal: AbortSignal | undefined) {
    const { fetched } = this.state;
    const missing = qualifiedNames.filter((name) => !this.byQualifiedName.has(name) && !fetched.has(name));
    if (missing.length > 0) {
      // Each in its latest version, as eager loading takes them; those the options name (a version pinned, maybe)
      // were fetched when the loader was made.
      for (const definition of await this.state.client.getTools(missing, { annotations: true, signal })) {
        fetched.set(qualifiedNameOf(definition.id), definition);
      }
    }
    const specs = new Map<string, OxpToolSpec>();
    for (const name of qualifiedNames) {
      const definition = fetched.get(name);
      const spec = this.byQualifiedName.get(name) ?? (definition === undefined ? undefined : this.add(definition));
      if (spec !== undefined) {
        specs.set(name, spec);
      }
    }
    return specs;
  }

  /** Makes a loaded definition a spec, under its name; a name the model cannot call, or one taken, is left out. */
  private add(definition: ToolDefinition): OxpToolSpec | undefined {
    const { name } = definition;
    if (!isModelName(name) || name === SEARCH_TOOL_NAME || this.byName.has(name)) {
      return undefined;
    }
    const qualifiedName = qualifiedNameOf(definition.id);
    this.state.fetched.delete(qualifiedName);
    const spec = toolSpec(definition, { ...this.state.parts, name });
    this.byName.set(name, spec);
    this.byQualifiedName.set(qualifiedName, spec);
    return spec;
  }

  /** Whether the options' `tools` and `toolkits` take this match. */
  private selects(item: Pick<ToolSearchSummary, "id" | "toolkit">): boolean {
    return (
      !this.state.narrowed || this.state.toolkits.has(item.toolkit) || this.state.pinned.has(qualifiedNameOf(item.id))
    );
  }

  /** The toolkit every search is narrowed to, when the selection has one only. */
  private onlyToolkit(): string | undefined {
    const { narrowed, toolkits } = this.state;
    return narrowed && toolkits.size === 1 ? [...toolkits][0] : undefined;
  }
}

/** The model's input to the search tool, checked: its query and toolkit, or the text that tells it what to correct. */
function searchInput(input: unknown): { query: string; toolkit?: string } | string {
  const { query, toolkit } = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
  if (typeof query !== "string" || query.trim() === "") {
    return `Error: ${SEARCH_TOOL_NAME} needs a query: what the tool should do, in a few words.`;
  }
  // Models often send an empty string or null for an optional property they mean to leave out.
  if (toolkit === undefined || toolkit === null || toolkit === "") {
    return { query };
  }
  return typeof toolkit === "string" ? { query, toolkit } : `Error: toolkit is a toolkit's name, a string.`;
}

/** Each tool once, at its best-ranked version: a search answers a tool's versions one by one. */
function firstOfEachTool(items: readonly ToolSearchSummary[]): ToolSearchSummary[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const name = qualifiedNameOf(item.id);
    if (seen.has(name)) {
      return false;
    }
    seen.add(name);
    return true;
  });
}

function qualifiedNameOf(id: string): string {
  return parseToolId(id)?.qualifiedName ?? id;
}

/** A search the model can correct: a query @otc/client refuses to send, or one the server answered 400. */
function isRefusal(error: unknown): error is Error {
  return error instanceof RangeError || (error instanceof Error && (error as { status?: unknown }).status === 400);
}
