/** The tool list's search box: ranked search on the server where it offers `search` (docs/protocol.md 9.5), a filter of the listed tools where it does not, and the debounce between typing and asking. */
import type { OxpClient, ToolSearchSummary } from "@otc/client";
import type { ToolDefinition } from "@otc/types";
import { titleOf } from "./annotations.js";

/** Matches asked for per page of a search (the server takes 1 to 50): a sidebar's worth, "More results" for the rest. */
export const SEARCH_PAGE_SIZE = 20;

/** How long the box waits after the last keystroke before it asks the server; Enter asks at once. */
export const SEARCH_DEBOUNCE_MS = 300;

/** The words of a local filter: the query cut at white space, in lower case. */
const wordsOf = (query: string) => query.toLowerCase().split(/\s+/).filter(Boolean);

/**
 * The tools of `tools` that the local filter keeps for `query`: those whose id, name or description (and title, when
 * `annotated`) hold every word of it, case-insensitive, in their order. An empty query keeps them all.
 *
 * @example
 * filterTools(tools, "add numbers", false); // the tools whose text holds "add" and "numbers"
 */
export function filterTools(tools: readonly ToolDefinition[], query: string, annotated: boolean): ToolDefinition[] {
  const words = wordsOf(query);
  if (words.length === 0) {
    return [...tools];
  }
  return tools.filter((tool) => {
    const title = annotated ? (titleOf(tool) ?? "") : "";
    const text = `${tool.id} ${tool.name} ${tool.description} ${title}`.toLowerCase();
    return words.every((word) => text.includes(word));
  });
}

/** One page of a server's search, best first. */
export interface SearchPage {
  items: ToolSearchSummary[];
  /** The server's `next_cursor`: more matches follow. */
  nextCursor?: string;
}

/** What to search for, and from where in the results. */
export interface SearchRequest {
  /** The query as typed; the server trims it and judges its length and terms (a 400 when it refuses). */
  query: string;
  /** Only this toolkit's matches; "" or absent for all. */
  toolkit?: string;
  /** The `next_cursor` of the previous page of the same query and toolkit. */
  cursor?: string;
}

/**
 * One page of the server's ranked search: `GET /tools?q=…&view=summary&limit=20` (with `toolkit` and `cursor` when
 * given). Summaries only: the definition of the match the user picks is loaded with {@link loadDefinition}.
 *
 * @example
 * const { items, nextCursor } = await searchServer(client, { query: "send an email" });
 */
export async function searchServer(client: OxpClient, request: SearchRequest): Promise<SearchPage> {
  const page = await client.searchTools(request.query, {
    view: "summary",
    limit: SEARCH_PAGE_SIZE,
    ...(request.toolkit ? { toolkit: request.toolkit } : {}),
    ...(request.cursor !== undefined ? { cursor: request.cursor } : {}),
  });
  return { items: page.items, ...(page.next_cursor !== undefined ? { nextCursor: page.next_cursor } : {}) };
}

/**
 * The full definition of a match, from `GET /tools?ids=<id>`, with its annotations when `annotations`. A server that
 * answers another tool (or none) is an Error naming the id: the page never shows a form built from the wrong schema.
 */
export async function loadDefinition(client: OxpClient, id: string, annotations: boolean): Promise<ToolDefinition> {
  const [tool] = await client.getTools([id], { annotations });
  if (!tool || tool.id !== id) {
    throw new Error(`the server answered ${tool ? tool.id : "no tool"} for ${id}`);
  }
  return tool;
}

/** The timers a debounce uses: the page's own, or a test clock's. */
export interface DebounceTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

/** A debounced action: `schedule` runs it once typing pauses, `flush` at once (Enter), `cancel` not at all. */
export interface Debounced {
  schedule(value: string): void;
  flush(value: string): void;
  cancel(): void;
}

/**
 * Runs `run` with the last value scheduled once `delayMs` have passed without another, or at once on `flush` (which
 * drops the one waiting): typing asks the server once per pause, not once per key.
 *
 * @example
 * const search = debounce((query) => void ask(query), SEARCH_DEBOUNCE_MS);
 * input.oninput = () => search.schedule(input.value);
 */
export function debounce(
  run: (value: string) => void,
  delayMs: number,
  timers: DebounceTimers = globalThis as unknown as DebounceTimers,
): Debounced {
  let timer: unknown;
  let waiting = false;
  const cancel = () => {
    if (waiting) {
      timers.clearTimeout(timer);
      waiting = false;
    }
  };
  return {
    schedule(value) {
      cancel();
      waiting = true;
      timer = timers.setTimeout(() => {
        waiting = false;
        run(value);
      }, delayMs);
    },
    flush(value) {
      cancel();
      run(value);
    },
    cancel,
  };
}
