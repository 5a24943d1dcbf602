/** `otc connections list|add|remove`: a user's accounts at third-party providers, whose tokens the server keeps (the connections extension, docs/protocol.md 9.7). */
import type { OxpClient } from "@otc/client";
import type { Connection } from "@otc/types";
import { EXIT, type Io } from "./io.js";
import { openInBrowser } from "./open-browser.js";
import { terminalSafe } from "./terminal-safe.js";

/** How `otc connections` is used, for its usage errors. */
export const CONNECTIONS_USAGE =
  "otc connections takes list, add <provider> or remove <connection id>, e.g. otc connections add google --user-id alice";

/** What `otc connections` was asked to do, its command line checked. */
export type ConnectionsAction =
  | { action: "list"; userId?: string }
  | { action: "add"; provider: string; scopes?: string[]; userId?: string; browser: boolean; wait: boolean }
  | { action: "remove"; id: string; userId?: string };

/** The options of the otc command line that `otc connections` reads. */
export interface ConnectionsFlags {
  scope?: string[];
  "no-browser"?: boolean;
  wait?: boolean;
  "user-id"?: string;
}

/** A provider id as the spec writes them (ConnectionRequest.provider). */
const PROVIDER_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** The spec's bounds on the scopes of one request (ConnectionRequest.scopes). */
const MAX_SCOPES = 64;
const MAX_SCOPE_CHARS = 256;

/**
 * The arguments after `otc connections`, checked: the action and what it takes, or why they are wrong (a usage error's
 * message). `--scope` may be repeated, and each may hold several scopes separated by spaces.
 *
 * @example
 * parseConnections(["add", "google"], { scope: ["gmail.readonly"], wait: true });
 * // { action: "add", provider: "google", scopes: ["gmail.readonly"], browser: true, wait: true }
 */
export function parseConnections(args: readonly string[], flags: ConnectionsFlags): ConnectionsAction | string {
  const [action, target, ...extra] = args;
  if (action !== "list" && action !== "add" && action !== "remove") {
    return action === undefined ? CONNECTIONS_USAGE : `unknown action '${action}': ${CONNECTIONS_USAGE}`;
  }
  const userId = flags["user-id"];
  if (userId === "") {
    return "--user-id must not be empty, e.g. --user-id alice";
  }
  const user = userId !== undefined ? { userId } : {};
  if (action !== "add") {
    const addOnly = (["scope", "no-browser", "wait"] as const).find((name) => flags[name] !== undefined);
    if (addOnly) {
      return `--${addOnly} is an option of otc connections add, not of otc connections ${action}`;
    }
  }
  const unexpected = (rest: readonly string[]) =>
    `unexpected argument${rest.length > 1 ? "s" : ""} ${rest.map((arg) => `'${arg}'`).join(", ")}: ${CONNECTIONS_USAGE}`;
  if (action === "list") {
    const rest = [target, ...extra].filter((arg) => arg !== undefined);
    return rest.length > 0 ? unexpected(rest) : { action, ...user };
  }
  if (target === undefined) {
    return action === "add"
      ? "otc connections add needs a provider's id, e.g. otc connections add google"
      : "otc connections remove needs a connection's id (otc connections list shows them)";
  }
  if (extra.length > 0) {
    return unexpected(extra);
  }
  if (action === "remove") {
    return { action, id: target, ...user };
  }
  if (!PROVIDER_ID.test(target)) {
    return `'${target}' is not a provider id: letters, digits, '_' and '-', at most 64`;
  }
  const scopes = flags.scope?.flatMap((value) => value.split(" ").filter((scope) => scope !== ""));
  if (scopes !== undefined) {
    if (scopes.length === 0 || scopes.length > MAX_SCOPES || scopes.some((scope) => scope.length > MAX_SCOPE_CHARS)) {
      return `--scope takes 1 to ${MAX_SCOPES} scopes of at most ${MAX_SCOPE_CHARS} characters, e.g. --scope openid --scope email`;
    }
  }
  return {
    action,
    provider: target,
    ...(scopes !== undefined ? { scopes } : {}),
    ...user,
    browser: flags["no-browser"] !== true,
    wait: flags.wait === true,
  };
}

/** What `otc connections` runs with. */
export interface ConnectionsContext {
  /** The server's client, with the command line's credentials. */
  client: OxpClient;
  io: Io;
  /** `--json`: the server's answers as they are, on stdout. */
  json: boolean;
  /** Opens a URL in a browser; default the platform's opener. */
  openUrl?: (url: string) => Promise<void>;
}

/**
 * One cell of a table: terminal-safe, and on one line (a newline or tab the server sent is shown as `\n`, `\t`). The
 * widths are measured on what is printed.
 */
const cell = (text: string) => terminalSafe(text).replace(/\n/g, "\\n").replace(/\t/g, "\\t");

/**
 * Connections as a table: id, provider, status, account, updated (RFC 3339, as the server sent it), in the server's
 * order (newest first); a line saying so when there are none.
 *
 * @example
 * formatConnections([{ id: "c_1", provider: "google", status: "active", scopes: [], account: "alice@example.com", created_at, updated_at }]);
 * // "ID   PROVIDER  STATUS  ACCOUNT            UPDATED\nc_1  google    active  alice@example.com  2026-12-01T10:00:00Z\n"
 */
export function formatConnections(connections: readonly Connection[]): string {
  if (connections.length === 0) {
    return "No connections. Connect an account with otc connections add <provider>.\n";
  }
  const rows = [
    ["ID", "PROVIDER", "STATUS", "ACCOUNT", "UPDATED"],
    ...connections.map((connection) =>
      [connection.id, connection.provider, connection.status, connection.account ?? "-", connection.updated_at].map(
        cell,
      ),
    ),
  ];
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  const lines = rows.map((row) =>
    row
      .map((text, column) => (column === row.length - 1 ? text : text.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
  return `${lines.join("\n")}\n`;
}

/** Whether otc hands `url` to the platform's opener: http(s) only, so a server cannot make it open a file or an app. */
function openable(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === "https:" || protocol === "http:";
  } catch {
    return false;
  }
}

/**
 * Runs a checked `otc connections` action; resolves with its exit code. The client's errors are thrown, for otc's one
 * report of them (an unknown id is the server's 404: exit 5, as a server without the extension is).
 */
export async function connectionsCommand(action: ConnectionsAction, context: ConnectionsContext): Promise<number> {
  const { client, io, json } = context;
  const print = (value: unknown) => io.stdout(`${JSON.stringify(value, null, 2)}\n`);
  const user = action.userId !== undefined ? { userId: action.userId } : {};
  if (action.action === "list") {
    const connections = await client.listConnections(user);
    if (json) {
      print({ items: connections });
    } else {
      io.stdout(formatConnections(connections));
    }
    return EXIT.ok;
  }
  if (action.action === "remove") {
    await client.disconnect(action.id, user);
    if (!json) {
      io.stdout(`Removed connection ${action.id}.\n`);
    }
    return EXIT.ok;
  }
  const flow = await client.connect({
    provider: action.provider,
    ...(action.scopes !== undefined ? { scopes: action.scopes } : {}),
    ...user,
  });
  // With --json, stdout carries one JSON document: the flow, or the connection once made.
  (json ? io.stderr : io.stdout)(
    `To connect your ${action.provider} account, open this URL in a browser:\n  ${cell(flow.url)}\n`,
  );
  if (action.browser) {
    if (openable(flow.url)) {
      await (context.openUrl ?? openInBrowser)(flow.url).catch(() => {
        io.stderr("otc: could not open a browser: open the URL above.\n");
      });
    } else {
      io.stderr("otc: not opening the URL in a browser: it is not an http:// or https:// URL.\n");
    }
  }
  if (!action.wait) {
    if (json) {
      print(flow);
    } else {
      io.stdout(`The connection ${cell(flow.id)} is pending until then (otc connections list shows it once made).\n`);
    }
    return EXIT.ok;
  }
  io.stderr("Waiting for the connection to complete...\n");
  let status: "completed" | "failed";
  try {
    status = await client.waitForConnection(flow, io.interrupt ? { signal: io.interrupt } : {});
  } catch (error) {
    if (io.interrupt?.aborted) {
      io.stderr(
        "Interrupted: the flow stays open until it expires; otc connections list shows whether it completed.\n",
      );
      return EXIT.interrupted;
    }
    throw error;
  }
  if (status === "failed") {
    io.stderr("The connection failed: denied at the provider, expired, or finished in another user's browser.\n");
    return EXIT.refused;
  }
  const connection = (await client.listConnections(user)).find((item) => item.id === flow.id);
  if (connection === undefined) {
    io.stderr(`Connected, but the server no longer lists the connection ${cell(flow.id)}.\n`);
  } else if (json) {
    print(connection);
  } else {
    const account = connection.account !== undefined ? ` as ${cell(connection.account)}` : "";
    io.stdout(`Connected your ${action.provider} account${account} (connection ${cell(flow.id)}).\n`);
  }
  return EXIT.ok;
}
