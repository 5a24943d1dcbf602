/** Parses tool ids and picks the version a tool id asks for (exact, `@x` shorthand, or highest). */
import { compareToolVersions, ToolIdSchema } from "@otc/types";

const TOOL_ID = new RegExp(ToolIdSchema.pattern);

/** What a tool id asks for. */
export interface ToolIdRequest {
  /** `Toolkit.Tool`, without the version. */
  qualifiedName: string;
  /** `exact` for `@x.y.z`, `major` for the `@x` shorthand (meaning x.0.0), `latest` without a version. */
  kind: "exact" | "major" | "latest";
  /** The version as written, e.g. `1.0.0` or `1`; absent for `latest`. */
  version?: string;
}

/** Splits a tool id, or returns undefined when it does not match the ToolId pattern. */
export function parseToolId(toolId: string): ToolIdRequest | undefined {
  // The length first: a hostile id of a megabyte is refused without reading it.
  if (toolId.length > ToolIdSchema.maxLength || !TOOL_ID.test(toolId)) return undefined;
  const at = toolId.indexOf("@");
  if (at === -1) return { qualifiedName: toolId, kind: "latest" };
  const version = toolId.slice(at + 1);
  return { qualifiedName: toolId.slice(0, at), kind: version.includes(".") ? "exact" : "major", version };
}

/** Orders `x.y.z` versions numerically (so 1.10.0 > 1.9.0); negative when `a` comes first. */
export const compareVersions = compareToolVersions;

/**
 * Picks, among the versions a tool has, the one a request asks for: `@x.y.z` exactly that version,
 * `@x` exactly `x.0.0` (not "the latest x"), no version the highest. Numeric: 1.10.0 is above 1.9.0.
 */
export function resolveVersion(available: readonly string[], request: ToolIdRequest): string | undefined {
  if (request.kind === "latest") {
    return available.reduce<string | undefined>(
      (best, version) => (best === undefined || compareVersions(version, best) > 0 ? version : best),
      undefined,
    );
  }
  const wanted = request.kind === "major" ? `${request.version}.0.0` : (request.version ?? "");
  return available.find((version) => compareVersions(version, wanted) === 0);
}
