/** Tool annotations both ways (internal): MCP's hints (`readOnlyHint`...) and OXP's annotations extension (`read_only`...), docs/protocol.md 9.2. */
import type { Tool as McpTool, ToolAnnotations as McpToolAnnotations } from "@modelcontextprotocol/server";
import type { ToolAnnotations, ToolDefinition } from "@otc/types";

/** The `_meta` key, on a listed MCP tool, of its OXP `deprecation_message`. */
export const DEPRECATION_META_KEY = "oxp/deprecation_message";

/** The longest OXP title (the spec's ToolAnnotations schema): a longer MCP title is cut to it. */
const MAX_TITLE_LENGTH = 200;

/** Each OXP hint and the MCP hint with the same meaning and the same default (docs/protocol.md 9.2). */
const HINTS = [
  ["read_only", "readOnlyHint"],
  ["destructive", "destructiveHint"],
  ["idempotent", "idempotentHint"],
  ["open_world", "openWorldHint"],
] as const;

/** A title as OXP takes it: not blank, at most 200 characters (a longer one ends in an ellipsis). */
function oxpTitle(title: unknown): string | undefined {
  if (typeof title !== "string" || title.trim() === "") {
    return undefined;
  }
  const characters = Array.from(title.trim());
  return characters.length <= MAX_TITLE_LENGTH
    ? characters.join("")
    : `${characters.slice(0, MAX_TITLE_LENGTH - 1).join("")}…`;
}

/**
 * The OXP annotations of an MCP tool, or undefined when it has none: its title (`title`, else
 * `annotations.title`, MCP's order) and each boolean hint under its OXP name. Both protocols give an
 * absent hint the same default, so absent stays absent. MCP's `destructiveHint` means nothing for a
 * read-only tool, and OXP refuses a tool both read-only and destructive: `destructiveHint: true` on a
 * read-only tool is dropped. Whatever
 * the MCP server sends, the result passes the OXP server's start-up check.
 *
 * @example
 * toOxpAnnotations({ name: "echo", title: "Echo", inputSchema: { type: "object" },
 *   annotations: { readOnlyHint: true, openWorldHint: false } });
 * // { title: "Echo", read_only: true, open_world: false }
 */
export function toOxpAnnotations(tool: Pick<McpTool, "title" | "annotations">): ToolAnnotations | undefined {
  const hints: Partial<Record<string, unknown>> = tool.annotations ?? {};
  const annotations: ToolAnnotations = {};
  const title = oxpTitle(tool.title) ?? oxpTitle(hints.title);
  if (title !== undefined) {
    annotations.title = title;
  }
  for (const [oxp, mcp] of HINTS) {
    const hint = hints[mcp];
    if (typeof hint === "boolean") {
      annotations[oxp] = hint;
    }
  }
  if (annotations.read_only === true && annotations.destructive === true) {
    delete annotations.destructive;
  }
  return Object.keys(annotations).length > 0 ? annotations : undefined;
}

/**
 * The MCP annotations of an OXP tool's, or undefined when it has none: each hint under its MCP name,
 * and the title as `annotations.title` (the bridge sets the tool's `title` too; older hosts read this one).
 *
 * @example
 * toMcpAnnotations({ title: "Add two numbers", read_only: true }); // { title: "Add two numbers", readOnlyHint: true }
 */
export function toMcpAnnotations(annotations: ToolAnnotations | undefined): McpToolAnnotations | undefined {
  if (annotations === undefined) {
    return undefined;
  }
  const out: McpToolAnnotations = {};
  if (annotations.title !== undefined) {
    out.title = annotations.title;
  }
  for (const [oxp, mcp] of HINTS) {
    const hint = annotations[oxp];
    if (hint !== undefined) {
      out[mcp] = hint;
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * An OXP tool's description as MCP lists it: a deprecated tool's starts with `Deprecated:` and what to use
 * instead, since MCP tools have no field for it and the description is what models and hosts read first.
 *
 * @example
 * mcpDescription({ description: "Greets.", deprecation_message: "Use Greeting.Hello@2.0.0." });
 * // "Deprecated: Use Greeting.Hello@2.0.0.\n\nGreets."
 */
export function mcpDescription(definition: Pick<ToolDefinition, "description" | "deprecation_message">): string {
  return definition.deprecation_message === undefined
    ? definition.description
    : `Deprecated: ${definition.deprecation_message}\n\n${definition.description}`;
}
