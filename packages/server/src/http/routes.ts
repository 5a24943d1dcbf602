/** The protocol's routes, read from the spec: which path names which route, and the methods each takes. */
import {
  CONNECTIONS_PATH,
  CONNECTIONS_PATH_TEMPLATE,
  HEALTH_PATH,
  OXP_ROUTES,
  TOOLKITS_PATH,
  TOOLS_CALL_PATH,
  TOOLS_CALLS_EVENTS_PATH_TEMPLATE,
  TOOLS_CALLS_PATH_TEMPLATE,
  TOOLS_PATH,
  WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH,
  WELL_KNOWN_OXP_PATH,
} from "@otc/types";
import { CHALLENGE_CHECK_PATH } from "../core/oxp-core.js";

/** The spec's routes with the methods each takes, HEAD wherever GET is (docs/protocol.md 1). */
export const ROUTES: readonly { path: string; methods: readonly string[] }[] = OXP_ROUTES.map((route) => ({
  path: route.path,
  methods: route.methods.flatMap((method) => (method === "GET" ? ["GET", "HEAD"] : [method])),
}));

/**
 * The name of each protocol route: OXP 1.0's four, discovery, the tasks extension's two (a call's status, and its
 * events), which exist only for a request that asks for that extension, and the oauth extension's protected
 * resource metadata, which exists only on a server configured with it.
 */
export type RouteName =
  | "health"
  | "discovery"
  | "resource"
  | "tools"
  | "toolkits"
  | "call"
  | "check"
  | "status"
  | "events"
  | "connections"
  | "connection";

/** The routes of the tasks extension: without `OXP-Extensions: tasks`, their paths are answered as unknown ones. */
export const TASK_ROUTES: ReadonlySet<RouteName> = new Set(["status", "events"]);
/** The search extension's own route (9.5): without `OXP-Extensions: search`, its path is answered as an unknown one. */
export const SEARCH_ROUTES: ReadonlySet<RouteName> = new Set(["toolkits"]);
/** The routes of the connections extension (9.7): without `OXP-Extensions: connections`, unknown paths too. */
export const CONNECTION_ROUTES: ReadonlySet<RouteName> = new Set(["connections", "connection"]);

/** A protocol route a request names: its name, the methods it takes, and (for a check_url) the raw challenge id segment. */
export interface ProtocolRoute {
  readonly name: RouteName;
  readonly methods: readonly string[];
  /** The challenge id or call id as sent (still percent-encoded: it is decoded after authentication). */
  readonly segment?: string;
}

const methodsOf = (path: string) => ROUTES.find((route) => route.path === path)?.methods ?? [];
const CHECK_PREFIX = `${CHALLENGE_CHECK_PATH}/`;
const RESOURCE_PREFIX = `${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH}/`;
const CONNECTION_PREFIX = `${CONNECTIONS_PATH}/`;
const CONNECTION_METHODS = methodsOf(CONNECTIONS_PATH_TEMPLATE);
const CHECK_METHODS = methodsOf(`${CHECK_PREFIX}{challenge_id}`);
const CALLS_PREFIX = TOOLS_CALLS_PATH_TEMPLATE.replace("{call_id}", "");
const EVENTS_SUFFIX = TOOLS_CALLS_EVENTS_PATH_TEMPLATE.replace(TOOLS_CALLS_PATH_TEMPLATE, "");
const STATUS_METHODS = methodsOf(TOOLS_CALLS_PATH_TEMPLATE);
const EVENTS_METHODS = methodsOf(TOOLS_CALLS_EVENTS_PATH_TEMPLATE);
const FIXED: ReadonlyMap<string, ProtocolRoute> = new Map(
  (
    [
      [TOOLS_CALL_PATH, "call"],
      [TOOLS_PATH, "tools"],
      [TOOLKITS_PATH, "toolkits"],
      [HEALTH_PATH, "health"],
      [WELL_KNOWN_OXP_PATH, "discovery"],
      [WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH, "resource"],
      [CONNECTIONS_PATH, "connections"],
    ] as const
  ).map(([path, name]) => [path, Object.freeze({ name, methods: methodsOf(path) })]),
);

/** The metadata's route, at either of its paths. */
const RESOURCE_ROUTE = FIXED.get(WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH) as ProtocolRoute;

/**
 * The path of a request target without its query: the origin form as sent, or the path of the absolute
 * form a proxy may send (scheme and host dropped, nothing normalised: `..` stays `..`, as Express sees it).
 */
export function requestPath(target: string): string | undefined {
  let path = target;
  if (path.charCodeAt(0) !== 47 /* / */) {
    const authority = /^https?:\/\/[^/?#]*/i.exec(path);
    if (!authority) {
      return undefined;
    }
    path = path.slice(authority[0].length) || "/";
    if (path.charCodeAt(0) !== 47) {
      path = `/${path}`;
    }
  }
  const query = path.indexOf("?");
  return query === -1 ? path : path.slice(0, query);
}

/** A path without the one trailing slash protocol routes tolerate (as Express routes match). */
export function withoutTrailingSlash(path: string): string {
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}

/**
 * The protocol route a path names, or undefined: case-sensitive, one trailing slash tolerated (as
 * Express routes match). The challenge id stays encoded: it is decoded after authentication.
 */
export function protocolRouteOf(rawPath: string): ProtocolRoute | undefined {
  const path = withoutTrailingSlash(rawPath);
  const fixed = FIXED.get(path);
  if (fixed) {
    return fixed;
  }
  // The path-inserted form of the metadata's URL, for a canonical URL with a path (RFC 9728 section 3.1).
  if (path.startsWith(RESOURCE_PREFIX)) {
    return RESOURCE_ROUTE;
  }
  if (path.startsWith(CONNECTION_PREFIX)) {
    const segment = path.slice(CONNECTION_PREFIX.length);
    if (segment.length > 0 && !segment.includes("/")) {
      return { name: "connection", methods: CONNECTION_METHODS, segment };
    }
  }
  if (path.startsWith(CHECK_PREFIX)) {
    const segment = path.slice(CHECK_PREFIX.length);
    if (segment.length > 0 && !segment.includes("/")) {
      return { name: "check", methods: CHECK_METHODS, segment };
    }
  }
  if (path.startsWith(CALLS_PREFIX)) {
    const rest = path.slice(CALLS_PREFIX.length);
    const events = rest.endsWith(EVENTS_SUFFIX);
    const segment = events ? rest.slice(0, -EVENTS_SUFFIX.length) : rest;
    if (segment.length > 0 && !segment.includes("/")) {
      return events
        ? { name: "events", methods: EVENTS_METHODS, segment }
        : { name: "status", methods: STATUS_METHODS, segment };
    }
  }
  return undefined;
}

/** The path of a call's status (`/tools/calls/{call_id}`, the tasks extension), its id percent-encoded. */
export function callPath(callId: string): string {
  return `${CALLS_PREFIX}${encodeURIComponent(callId)}`;
}
