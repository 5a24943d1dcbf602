/**
 * `otc tools --search` (the search extension, docs/protocol.md 9.5: the tools that fit a task, ranked) and the tools
 * `otc codegen --ids` names: asked of the server with getTools, or picked from a whole catalog where there is no search.
 */
import {
  type OxpClient,
  OxpExtensionUnavailableError,
  type ToolSearchMatch,
  type ToolSearchSummary,
} from "@otc/client";
import { parseToolId, resolveToolVersion, type ToolDefinition } from "@otc/types";
import { EXIT, type Io } from "./io.js";
import { terminalSafe } from "./terminal-safe.js";

/** What `otc tools --search` was asked. */
export interface SearchAction {
  q: string;
  toolkit?: string;
  limit?: number;
}

/** One cell of the table: terminal-safe and on one line, its width measured on what is printed. */
const cell = (text: string) => terminalSafe(text).replace(/\n/g, "\\n").replace(/\t/g, "\\t");

/**
 * Search results as a table, best first: score (two decimals), toolkit, id and the first line of the description, a
 * deprecated version marked so; a line saying so when nothing matched, and one when more matches follow.
 *
 * @example
 * formatSearch([{ id: "Gmail.SendEmail@2.0.0", name: "Gmail_SendEmail", description: "Sends an email.", toolkit: "Gmail", version: "2.0.0", score: 9.5 }], "send email", false);
 * // "SCORE  TOOLKIT  ID                     DESCRIPTION\n 9.50  Gmail    Gmail.SendEmail@2.0.0  Sends an email.\n"
 */
export function formatSearch(
  items: readonly (ToolSearchSummary | ToolSearchMatch)[],
  q: string,
  more: boolean,
): string {
  if (items.length === 0) {
    return `No tool matches '${cell(q)}'.\n`;
  }
  const rows = [
    ["SCORE", "TOOLKIT", "ID", "DESCRIPTION"],
    ...items.map((item) => [
      item.score.toFixed(2),
      cell(item.toolkit),
      cell(item.id),
      `${cell(item.description.split("\n")[0] ?? "")}${item.deprecation_message !== undefined ? "  [deprecated]" : ""}`,
    ]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  const lines = rows.map((row) =>
    row
      .map((text, column) =>
        column === 0 ? text.padStart(widths[0] ?? 0) : column === 3 ? text : text.padEnd(widths[column] ?? 0),
      )
      .join("  ")
      .trimEnd(),
  );
  if (more) {
    lines.push("More tools match: --limit N shows up to 50.");
  }
  return `${lines.join("\n")}\n`;
}

/**
 * Runs `otc tools --search`: the server's matches as a table (the summary view: nothing else is printed), or with
 * `--json` its answer as sent (the full view: whole definitions, each with its toolkit and score). A server without
 * the extension is not searched: otc says so (exit 5) rather than print its whole list.
 */
export async function searchCommand(
  action: SearchAction,
  context: { client: OxpClient; io: Io; json: boolean },
): Promise<number> {
  const { client, io, json } = context;
  const options = {
    ...(action.toolkit !== undefined ? { toolkit: action.toolkit } : {}),
    ...(action.limit !== undefined ? { limit: action.limit } : {}),
  };
  try {
    if (json) {
      io.stdout(`${JSON.stringify(await client.searchTools(action.q, { ...options, view: "full" }), null, 2)}\n`);
    } else {
      const page = await client.searchTools(action.q, { ...options, view: "summary" });
      io.stdout(formatSearch(page.items, action.q, page.next_cursor !== undefined));
    }
  } catch (error) {
    if (!(error instanceof OxpExtensionUnavailableError)) {
      throw error;
    }
    io.stderr(
      "otc tools --search needs the search extension, which the server does not offer (GET /.well-known/oxp): otc tools lists every tool.\n",
    );
    return EXIT.refused;
  }
  return EXIT.ok;
}

/** Ids that name no tool of a catalog read whole (a file, a server without search): otc exits 5, as for the server's 400. */
export class UnknownToolIdsError extends Error {
  override name = "UnknownToolIdsError";
}

/**
 * The ids of `--ids A,B@2`: comma-separated, spaces around each ignored; undefined for a list with an empty one (the
 * caller's usage error).
 */
export function parseIdList(text: string): string[] | undefined {
  const ids = text.split(",").map((id) => id.trim());
  return ids.some((id) => id === "") ? undefined : ids;
}

/**
 * The tools of `catalog` that `ids` name, in the order named and each once, every id resolved as a call's tool_id is
 * (docs/protocol.md 3.4: `A` the highest version, `A@2` exactly 2.0.0), as the server's `GET /tools?ids=` resolves
 * them. Ids that name none are an UnknownToolIdsError naming them and `source`.
 */
export function pickTools(
  catalog: readonly ToolDefinition[],
  ids: readonly string[],
  source: string,
): ToolDefinition[] {
  const picked: ToolDefinition[] = [];
  const unknown: string[] = [];
  for (const id of ids) {
    const wanted = parseToolId(id);
    const versions = wanted
      ? catalog.filter((tool) => parseToolId(tool.id)?.qualifiedName === wanted.qualifiedName)
      : [];
    const version = wanted
      ? resolveToolVersion(
          versions.map((tool) => tool.version),
          wanted,
        )
      : undefined;
    const found = versions.find((tool) => tool.version === version);
    if (found === undefined) {
      unknown.push(id);
    } else if (!picked.includes(found)) {
      picked.push(found);
    }
  }
  if (unknown.length > 0) {
    const named = unknown.map((id) => `'${id}'`).join(", ");
    throw new UnknownToolIdsError(`--ids names no tool of ${source}: ${named}`);
  }
  return picked;
}

/**
 * The tools `ids` name on the server, annotated where it offers annotations: one `GET /tools?ids=` per 100 ids where
 * it offers search (its 400 names the ids it does not have), else its whole list, picked from here.
 */
export async function toolsByIds(client: OxpClient, ids: readonly string[], source: string): Promise<ToolDefinition[]> {
  try {
    return await client.getTools(ids, { annotations: true });
  } catch (error) {
    if (!(error instanceof OxpExtensionUnavailableError)) {
      throw error;
    }
    return pickTools(await client.listTools({ annotations: true }), ids, source);
  }
}
