/** Tool names across the bridge: OXP ids to MCP names and MCP names to OXP tool names, valid and unique on each side. */
import { createHash } from "node:crypto";

/** What MCP clients accept as a tool name. */
export const MCP_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** What OXP accepts as a toolkit or tool name. */
export const OXP_NAME = /^[A-Za-z0-9_]+$/;

const MAX_MCP_NAME = 64;

/**
 * The MCP names of the bridge's tool search meta-tools (its `toolSearch` option). An OXP tool's MCP name is letters,
 * digits and `_` only ({@link mcpToolName}, cut with `_` and a hex digest, made unique with `_2`...), so a name with a
 * `-` can never be one of theirs: whatever the catalog holds (a toolkit `search` with a tool `tools` is
 * `search_tools`), the meta-tools and the bridged tools keep apart, and no bridged tool is renamed by the option.
 */
export const SEARCH_TOOLS_NAME = "search-tools";
/** The MCP name of the meta-tool that gives tools' input schemas by name; see {@link SEARCH_TOOLS_NAME}. */
export const LOAD_TOOLS_NAME = "load-tools";

/** A short stable digest, to keep names unique when they must be cut. */
const digest = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 8);

/** `name` cut to `max` characters; a cut name ends in a digest of the whole one, so two long names stay apart. */
function fit(name: string, max: number): string {
  if (name.length <= max) {
    return name;
  }
  const tail = `_${digest(name)}`;
  return `${name.slice(0, max - tail.length)}${tail}`;
}

/** `base`, or `base_2`, `base_3`... the first one not in `taken` (which it is then added to). */
export function claimUnique(base: string, taken: Set<string>, max = Number.POSITIVE_INFINITY): string {
  let candidate = fit(base, max);
  for (let n = 2; taken.has(candidate); n++) {
    const suffix = `_${n}`;
    candidate = `${fit(base, max - suffix.length)}${suffix}`;
  }
  taken.add(candidate);
  return candidate;
}

/**
 * The MCP name of an OXP tool: `Toolkit_Tool`, and `Toolkit_Tool_v1_0_0` when it names a version that
 * is not the latest. Letters, digits and `_` only (a subset of what MCP allows), at most 64 characters.
 */
export function mcpToolName(toolkit: string, tool: string, version?: string): string {
  const base = `${toolkit}_${tool}`.replace(/[^A-Za-z0-9_]/g, "_");
  return version === undefined ? base : `${base}_v${version.replace(/[^A-Za-z0-9]/g, "_")}`;
}

/** Fits an MCP name made by {@link mcpToolName} into MCP's 64 characters and makes it unique among `taken`. */
export function uniqueMcpName(name: string, taken: Set<string>): string {
  return claimUnique(name, taken, MAX_MCP_NAME);
}

/**
 * The OXP tool name for an MCP tool name: its words in PascalCase (`get-sum` is `GetSum`, `fs.read_file`
 * is `FsReadFile`), anything outside `[A-Za-z0-9]` dropped; `Tool` when nothing is left.
 */
export function oxpToolName(mcpName: string): string {
  const words = mcpName.split(/[^A-Za-z0-9]+/).filter((word) => word !== "");
  const name = words.map((word) => `${word.charAt(0).toUpperCase()}${word.slice(1)}`).join("");
  return name === "" ? "Tool" : name;
}

/** Code-point order, the same under every locale, so the names collisions get never depend on where the bridge runs. */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
