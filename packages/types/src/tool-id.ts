/** Tool ids (docs/protocol.md 3.4): the one place that splits, writes and resolves them, by the spec's ToolId schema. */
import { ToolIdSchema } from "./generated/schemas.js";
import { compareToolVersions } from "./tool-version.js";

const TOOL_ID = new RegExp(ToolIdSchema.pattern);

/** A tool id in parts, as {@link parseToolId} reads it. */
export interface ParsedToolId {
  /** The part before the dot: `Calculator` in `Calculator.Add@1`. */
  toolkit: string;
  /** The part after the dot: `Add` in `Calculator.Add@1`. */
  tool: string;
  /** `Toolkit.Tool`, without the version. */
  qualifiedName: string;
  /** The version as written (`1.0.0`, or `1` for the shorthand); absent without one. */
  version?: string;
  /** `exact` for `@x.y.z`, `major` for the `@x` shorthand (meaning x.0.0), `latest` without a version. */
  kind: "exact" | "major" | "latest";
}

/** What a version request needs of a parsed id: its kind and the version as written. */
export type ToolVersionRequest = Pick<ParsedToolId, "kind" | "version">;

/**
 * Splits a tool id, or returns undefined when it breaks the spec's ToolId schema (pattern or length).
 *
 * @example
 * parseToolId("Calculator.Add@1"); // { toolkit: "Calculator", tool: "Add", qualifiedName: "Calculator.Add", version: "1", kind: "major" }
 * parseToolId("Calculator.Add@01"); // undefined: no leading zeros
 */
export function parseToolId(id: string): ParsedToolId | undefined {
  // The length first: a hostile id of a megabyte is refused without reading it.
  if (id.length > ToolIdSchema.maxLength || !TOOL_ID.test(id)) {
    return undefined;
  }
  const at = id.indexOf("@");
  const qualifiedName = at === -1 ? id : id.slice(0, at);
  const dot = qualifiedName.indexOf(".");
  const parts = { toolkit: qualifiedName.slice(0, dot), tool: qualifiedName.slice(dot + 1), qualifiedName };
  if (at === -1) {
    return { ...parts, kind: "latest" };
  }
  const version = id.slice(at + 1);
  return { ...parts, version, kind: version.includes(".") ? "exact" : "major" };
}

/**
 * Writes a tool id from its parts: `Toolkit.Tool`, then `@version` when there is one. It does not check them.
 *
 * @example
 * formatToolId({ toolkit: "Calculator", tool: "Add", version: "1.0.0" }); // "Calculator.Add@1.0.0"
 */
export function formatToolId(parts: { toolkit: string; tool: string; version?: string | undefined }): string {
  const qualifiedName = `${parts.toolkit}.${parts.tool}`;
  return parts.version === undefined ? qualifiedName : `${qualifiedName}@${parts.version}`;
}

/**
 * The one `x.y.z` version a request asks for: `@x.y.z` as written, `@x` as `x.0.0`; undefined for the latest.
 *
 * @example
 * requestedToolVersion({ kind: "major", version: "2" }); // "2.0.0"
 */
export function requestedToolVersion(request: ToolVersionRequest): string | undefined {
  if (request.kind === "latest" || request.version === undefined) {
    return undefined;
  }
  return request.kind === "major" ? `${request.version}.0.0` : request.version;
}

/**
 * Picks, among a tool's versions, the one a request asks for: `@x.y.z` exactly that version, `@x`
 * exactly `x.0.0` (not the newest `x.*`), no version the highest, compared numerically.
 *
 * @example
 * resolveToolVersion(["1.9.0", "1.10.0", "2.0.0"], { kind: "major", version: "1" }); // undefined: there is no 1.0.0
 * resolveToolVersion(["1.9.0", "1.10.0"], { kind: "latest" }); // "1.10.0"
 */
export function resolveToolVersion(available: readonly string[], request: ToolVersionRequest): string | undefined {
  if (request.kind === "latest") {
    return available.reduce<string | undefined>(
      (best, version) => (best === undefined || compareToolVersions(version, best) > 0 ? version : best),
      undefined,
    );
  }
  const wanted = requestedToolVersion(request);
  return wanted === undefined ? undefined : available.find((version) => compareToolVersions(version, wanted) === 0);
}
