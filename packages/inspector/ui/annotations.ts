/** What a tool says it does to the world (docs/protocol.md 9.2): each hint as stated or by its default, and when the page asks before a call. */
import type { ToolAnnotations, ToolDefinition } from "@otc/types";

/** What the page reads of a tool's annotations: a definition, or a search's summary of one (no schemas). */
export type Described = Pick<ToolDefinition, "annotations" | "deprecation_message">;

/** One hint as the page shows it: its value, and whether the tool stated it or the protocol's default applies. */
export interface Hint {
  value: boolean;
  stated: boolean;
}

/** A tool's four hints, each stated or defaulted. */
export interface Hints {
  readOnly: Hint;
  destructive: Hint;
  idempotent: Hint;
  openWorld: Hint;
}

/** The defaults of an absent hint (`annotations.meaning`, MCP's defaults): not read-only, destructive, not idempotent, open world. */
const DEFAULTS = { read_only: false, destructive: true, idempotent: false, open_world: true } as const;

/** A hint of a hostile or sloppy server's annotations: its own value only when it is a boolean, else the default. */
function hint(annotations: ToolAnnotations | undefined, key: keyof typeof DEFAULTS): Hint {
  const value = (annotations as Record<string, unknown> | undefined)?.[key];
  return typeof value === "boolean" ? { value, stated: true } : { value: DEFAULTS[key], stated: false };
}

/**
 * The tool's hints, with the protocol's defaults where it says nothing. `destructive` and `idempotent` speak of a tool
 * that is not read-only: for a read-only one they are moot (see {@link isDestructive}).
 *
 * @example
 * hintsOf({ annotations: { read_only: true } } as ToolDefinition).destructive; // { value: true, stated: false }
 */
export function hintsOf(tool: Described): Hints {
  const annotations = isObject(tool.annotations) ? tool.annotations : undefined;
  return {
    readOnly: hint(annotations, "read_only"),
    destructive: hint(annotations, "destructive"),
    idempotent: hint(annotations, "idempotent"),
    openWorld: hint(annotations, "open_world"),
  };
}

/** True when the tool may delete or overwrite, as the protocol reads its hints: not read-only, and not `destructive: false`. */
export function isDestructive(tool: Described): boolean {
  const hints = hintsOf(tool);
  return !hints.readOnly.value && hints.destructive.value;
}

/** The tool's title for people, when it has one that is a non-empty string. */
export function titleOf(tool: Described): string | undefined {
  const title = isObject(tool.annotations) ? tool.annotations.title : undefined;
  return typeof title === "string" && title.length > 0 ? title : undefined;
}

/** What to use instead of the tool, when the server says it is deprecated. */
export function deprecationOf(tool: Described): string | undefined {
  const message = tool.deprecation_message;
  return typeof message === "string" && message.length > 0 ? message : undefined;
}

/**
 * True when the page asks the user before calling the tool: the server applied the annotations extension (so the
 * tool was described at all) and the tool is destructive, by its own word or by default (not read-only and not
 * `destructive: false`), as the protocol reads a missing hint. A server without the extension says nothing of any
 * tool, and the page then asks nothing: it would have to ask before every call.
 *
 * @example
 * needsConfirmation({ annotations: { read_only: false } } as ToolDefinition, true); // true: destructive by default
 */
export function needsConfirmation(tool: ToolDefinition, annotationsApplied: boolean): boolean {
  return annotationsApplied && isDestructive(tool);
}

function isObject(value: unknown): value is ToolAnnotations {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
