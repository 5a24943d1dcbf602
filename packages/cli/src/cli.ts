/** The `otc` command: argument parsing, the commands, human and JSON output, exit codes by error kind. */
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import {
  type ClientClock,
  type ClientOptions,
  createClient,
  normalizeToolDefinition,
  OxpAccessTokenError,
  OxpAuthenticationError,
  type OxpClient,
  OxpConnectionError,
  OxpCrossOriginError,
  OxpExtensionUnavailableError,
  OxpProtocolError,
  OxpResponseTooLargeError,
  OxpServerError,
  OxpTimeoutError,
  OxpValidationError,
  sameOrigin,
} from "@otc/client";
import {
  type CallToolContext,
  type CallToolResponse,
  compareToolVersions,
  formatToolId,
  parseToolId,
  resolveToolVersion,
  type ToolDefinition,
} from "@otc/types";
import { hintWords } from "./annotations.js";
import { type CredentialsFile, CredentialsFileError, readCredentials, resourceKey } from "./credentials.js";
import { EXIT, type Io } from "./io.js";
import { storedSignInProvider } from "./oauth-session.js";
import {
  parseIdList,
  pickTools,
  type SearchAction,
  searchCommand,
  toolsByIds,
  UnknownToolIdsError,
} from "./search-command.js";
import { callAsTask } from "./task-call.js";
import { terminalSafe } from "./terminal-safe.js";

export { terminalSafe } from "./terminal-safe.js";

export const HELP = `otc: talk to an OXP (Open eXecution Protocol) Tool Server

Usage:
  otc health
  otc tools [--search TEXT [--limit N]] [--toolkit NAME]
  otc call <tool_id> [--input JSON | --input @file.json] [--user-id U]
                     [--secret ID=VALUE]... [--token PROVIDER=TOKEN]... [--call-id ID] [--wait-auth]
                     [--async]
  otc calls get <call_id> [--wait-seconds N]
  otc calls cancel <call_id>
  otc connections list [--user-id U]
  otc connections add <provider> [--scope S]... [--no-browser] [--wait] [--user-id U]
  otc connections remove <connection_id> [--user-id U]
  otc codegen --from <url | tools.json> --out <file.ts> [--ids ID,ID...]
  otc mcp serve [--transport stdio|http] ...   the server's tools to MCP clients (otc mcp --help)
  otc inspect <url> [--port N] [--no-open]      the Inspector web page for a server (otc inspect --help)
  otc login <url> [--client-id ID] [--scope S] [--no-browser]
                                                sign in to a server with OAuth (otc login --help)
  otc logout <url>                              revoke and forget that sign-in

Global options:
  --url URL           the server (env OXP_URL; default http://127.0.0.1:8080)
  --api-key KEY       send an API key in OXP-API-Key (env OXP_API_KEY)
  --jwt-secret S      sign HS256 JWTs with this shared secret (env OXP_JWT_SECRET)
  --jwt-audience A    the JWT's aud claim (env OXP_JWT_AUDIENCE)
  --jwt-subject S     the JWT's sub claim, who is calling (env OXP_JWT_SUBJECT; default otc-cli)
  --timeout-ms N      time limit of one attempt (default 60000)
  --json              print the server's JSON answers as they are
  -h, --help          this text

  Without --api-key or --jwt-secret, a server signed in to with otc login gets the sign-in's
  access token, renewed with its refresh token when it expires or is refused

tools, codegen:
  --search TEXT       the tools that fit TEXT, best first, where the server offers search: score,
                      toolkit, id and description (--json: the server's answer, whole definitions);
                      --limit N of them (default 10, at most 50); --toolkit NAME keeps one toolkit's
                      tools, with or without --search
  --ids ID,ID...      codegen only for these tools (Calculator.Add, Gmail.SendEmail@2), each resolved
                      as otc call resolves it; an id that names no tool stops codegen (exit 5)
  where the server offers annotations, otc tools shows each tool's title, the hints it states
  (read-only, destructive, idempotent, open-world) and its deprecated versions (--json: as listed),
  and otc codegen writes them into each tool's doc comment, a deprecation as @deprecated

call:
  --wait-auth         when the tool needs an authorization, show its URL, wait until it is
                      completed, then retry the same call (polling its check_url only on the
                      server's origin)
  --async             run the call as a task where the server offers them (the tasks extension):
                      its progress on stderr (a bar on a terminal, a line per update otherwise),
                      then the result as without --async. Ctrl-C cancels the call on the server,
                      prints its status and exits 130. A server without tasks gets a plain call

calls (the tasks extension; only the credentials that started a call see it):
  get                 print a call's status as JSON (--wait-seconds N, up to 30: wait until it
                      changes)
  cancel              cancel a running call and print its final status as JSON

connections (the connections extension: the server keeps the user's tokens for third-party
providers and gives them to that user's tool calls; the user is the otc login sign-in's, else
--user-id, which a caller with an API key or a JWT must give):
  list                the user's connections: id, provider, status, account, last update
  add <provider>      start connecting an account at the provider: prints the URL to open, and
                      opens it in a browser (not with --no-browser); --scope S asks for a scope
                      (repeat it; default the server's); --wait waits until the account is
                      connected (exit 5 if it failed)
  remove <id>         disconnect: the server revokes the tokens and forgets them

What the server sends is printed with control characters (escape sequences, carriage returns)
and bidi controls written as visible \\uXXXX escapes.

Exit codes:
  0  success
  1  the tool ran and failed (success: false), or the server is not healthy
  2  usage error (unknown command or option, extra argument, bad --url or --input, unreadable file)
  3  the server could not be reached, or did not answer in time
  4  authentication failed (401)
  5  the server refused the call (400: unknown tool, missing requirement or authorization)
  6  invalid input (422)
  7  the server's answer does not follow the OXP specification
  130  interrupted (Ctrl-C); with --async, the call was cancelled on the server
`;

class UsageError extends Error {}

const COMMANDS = [
  "health",
  "tools",
  "call",
  "calls",
  "connections",
  "codegen",
  "mcp",
  "inspect",
  "login",
  "logout",
  "help",
] as const;

const OPTIONS = {
  url: { type: "string" },
  "api-key": { type: "string" },
  "jwt-secret": { type: "string" },
  "jwt-audience": { type: "string" },
  "jwt-subject": { type: "string" },
  "timeout-ms": { type: "string" },
  json: { type: "boolean" },
  input: { type: "string" },
  "user-id": { type: "string" },
  secret: { type: "string", multiple: true },
  token: { type: "string", multiple: true },
  "call-id": { type: "string" },
  "wait-auth": { type: "boolean" },
  async: { type: "boolean" },
  "wait-seconds": { type: "string" },
  scope: { type: "string", multiple: true },
  "no-browser": { type: "boolean" },
  wait: { type: "boolean" },
  from: { type: "string" },
  out: { type: "string" },
  search: { type: "string" },
  toolkit: { type: "string" },
  limit: { type: "string" },
  ids: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

const DEFAULT_URL = "http://127.0.0.1:8080";
const CALLS_USAGE =
  "otc calls takes get or cancel and one call id, e.g. otc calls get 0b7c9e1e-5d6f-4a1b-9c1e-2f3a4b5c6d7e";
/** The `sub` of the JWTs otc signs when neither --jwt-subject nor OXP_JWT_SUBJECT names one. */
export const DEFAULT_JWT_SUBJECT = "otc-cli";

const INPUT_EXAMPLE = `--input '{"a": 1, "b": 2}'`;

/** Edit distance between two strings (insertions, deletions, substitutions), in O(a * b) time and O(b) space. */
export function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** Up to `max` candidates within a case-insensitive edit distance of a third of `word`'s length, nearest first. */
export function nearest(word: string, candidates: readonly string[], max = 3): string[] {
  // Tool ids are at most 256 characters: a longer word is no typo of one, and is not worth O(n * m).
  if (word.length > 256) {
    return [];
  }
  const wanted = word.toLowerCase();
  const limit = Math.max(1, Math.floor(word.length / 3));
  return [...new Set(candidates)]
    .filter((candidate) => candidate !== word && Math.abs(candidate.length - word.length) <= limit)
    .map((candidate) => ({ candidate, distance: levenshtein(wanted, candidate.toLowerCase()) }))
    .filter(({ distance }) => distance <= limit)
    .sort((a, b) => a.distance - b.distance)
    .slice(0, max)
    .map(({ candidate }) => candidate);
}

const didYouMean = (suggestions: readonly string[]) =>
  suggestions.length > 0 ? ` (did you mean ${suggestions.map((item) => `'${item}'`).join(" or ")}?)` : "";

/** The catalog's tool ids a call's tool id may have meant; none when the catalog has that tool (`@1` is `1.0.0`). */
export function suggestToolIds(toolId: string, tools: readonly ToolDefinition[]): string[] {
  const wanted = parseToolId(toolId);
  // The client checked the catalog against the spec, so every id parses; one that does not is left out.
  const known = tools.flatMap((tool) => {
    const id = parseToolId(tool.id);
    return id ? [{ ...id, version: tool.version }] : [];
  });
  if (wanted) {
    const versions = known.filter((tool) => tool.qualifiedName === wanted.qualifiedName).map((tool) => tool.version);
    if (resolveToolVersion(versions, wanted) !== undefined) {
      return [];
    }
  }
  const newestFirst = [...known].sort((a, b) => compareToolVersions(b.version, a.version));
  // An id that breaks the pattern may still have meant a version: it is offered names with and without.
  const candidates = newestFirst.flatMap((tool) =>
    wanted?.kind === "latest" ? [tool.qualifiedName] : [tool.qualifiedName, formatToolId(tool)],
  );
  return nearest(toolId, candidates);
}

/** The messages at the bottom of an error's `cause` chain, where undici puts why a fetch failed (AggregateErrors opened). */
export function rootCauses(error: unknown): string[] {
  const found: string[] = [];
  const seen = new Set<unknown>();
  const visit = (item: unknown) => {
    if (seen.has(item)) {
      return;
    }
    seen.add(item);
    if (item instanceof AggregateError && item.errors.length > 0) {
      for (const inner of item.errors) {
        visit(inner);
      }
    } else if (item instanceof Error && item.cause instanceof Error) {
      visit(item.cause);
    } else {
      const message = item instanceof Error ? item.message || item.name : String(item);
      if (!found.includes(message)) {
        found.push(message);
      }
    }
  };
  visit(error);
  return found;
}

/** `ID=VALUE` pairs into `{id, <field>}` objects. */
function pairs<F extends "value" | "token">(items: readonly string[] | undefined, field: F, flag: string) {
  return (items ?? []).map((item) => {
    const at = item.indexOf("=");
    if (at <= 0) {
      throw new UsageError(`--${flag} takes ID=VALUE, got '${item}'`);
    }
    return { id: item.slice(0, at), [field]: item.slice(at + 1) } as { id: string } & Record<F, string>;
  });
}

/** Why parseArgs refused the command line, in one line: Node's own messages span lines and suggest `--`. */
function parseFailure(argv: readonly string[], error: unknown): string {
  const { tokens } = parseArgs({
    args: [...argv],
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const names = Object.keys(OPTIONS);
  for (const token of tokens) {
    if (token.kind !== "option") {
      continue;
    }
    if (!Object.hasOwn(OPTIONS, token.name)) {
      const suggestions = token.rawName.startsWith("--") ? nearest(token.name, names).map((name) => `--${name}`) : [];
      return `unknown option '${token.rawName}'${didYouMean(suggestions)}`;
    }
    const type = OPTIONS[token.name as keyof typeof OPTIONS].type;
    if (type === "boolean" && token.inlineValue) {
      return `option '${token.rawName}' takes no value`;
    }
    if (type === "string" && token.value === undefined) {
      return `option '${token.rawName}' needs a value`;
    }
    if (type === "string" && !token.inlineValue && token.value?.startsWith("-")) {
      return `option '${token.rawName}' needs a value (for one that starts with '-', write ${token.rawName}=${token.value})`;
    }
  }
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
  return message.charAt(0).toLowerCase() + message.slice(1);
}

/** `'a=1', 'b=2'` as the `--input` they were probably meant to be, when they all look like that. */
function inputExample(args: readonly string[]): string {
  const entries = args.map((arg) => /^([^=]+)=(.*)$/s.exec(arg));
  if (entries.some((entry) => entry === null) || args.some((arg) => arg.includes("'"))) {
    return INPUT_EXAMPLE;
  }
  const fields = (entries as RegExpExecArray[]).map(([, key = "", raw = ""]) => {
    const value = /^(-?\d+(\.\d+)?|true|false|null)$/.test(raw) ? JSON.parse(raw) : raw;
    return `${JSON.stringify(key)}: ${JSON.stringify(value)}`;
  });
  return `--input '{${fields.join(", ")}}'`;
}

/** Refuses the arguments a command does not take, saying how to pass what they were probably meant for. */
function checkArity(command: string, args: readonly string[]): void {
  if (command === "connections") {
    // Its arguments depend on its action: parseConnections counts them.
    return;
  }
  const extra = args.slice(command === "call" ? 1 : command === "calls" ? 2 : 0);
  if (extra.length === 0) {
    return;
  }
  const what = `unexpected argument${extra.length > 1 ? "s" : ""} ${extra.map((arg) => `'${arg}'`).join(", ")}`;
  switch (command) {
    case "call":
      throw new UsageError(`${what}: pass the input as JSON, e.g. otc call ${args[0]} ${inputExample(extra)}`);
    case "codegen":
      throw new UsageError(`${what}: codegen takes options, e.g. otc codegen --from ${DEFAULT_URL} --out tools.ts`);
    case "calls":
      throw new UsageError(`${what}: ${CALLS_USAGE}`);
    case "tools":
      throw new UsageError(
        `${what}: otc tools takes no arguments (to find tools, otc tools --search ${JSON.stringify(extra.join(" "))})`,
      );
    default:
      throw new UsageError(`${what}: otc ${command} takes no arguments`);
  }
}

/** The options that belong to one command: `--search`, `--limit` and `--toolkit` to otc tools, `--ids` to otc codegen. */
function checkPlaces(command: string, values: Values): void {
  const owners = { search: "tools", toolkit: "tools", limit: "tools", ids: "codegen" } as const;
  for (const [option, owner] of Object.entries(owners)) {
    if (values[option as keyof typeof owners] !== undefined && command !== owner) {
      throw new UsageError(`--${option} is an option of otc ${owner}, not of otc ${command}`);
    }
  }
  if (values.limit !== undefined && values.search === undefined) {
    throw new UsageError(`--limit goes with --search, e.g. otc tools --search "send an email" --limit 5`);
  }
}

/** `otc tools --search` as asked, checked; undefined without `--search`. */
function searchOptions(values: Values): SearchAction | undefined {
  if (values.search === undefined) {
    return undefined;
  }
  if (values.search.trim() === "") {
    throw new UsageError(`--search needs some text, e.g. otc tools --search "send an email"`);
  }
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!/^\d+$/.test(values.limit) || !(limit >= 1)) {
      throw new UsageError(
        "--limit takes a whole number of tools, 1 or more (the server shows at most 50), e.g. --limit 5",
      );
    }
  }
  return {
    q: values.search,
    ...(values.toolkit !== undefined ? { toolkit: values.toolkit } : {}),
    ...(limit !== undefined ? { limit } : {}),
  };
}

/** Every item of an async iterable, in order. */
async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) {
    items.push(item);
  }
  return items;
}

/** A server's base URL, or a usage error naming where it came from: without a scheme it is no URL fetch can use. */
function serverUrl(raw: string, origin: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== "http:" && url?.protocol !== "https:") {
    const guess = /^[\w.-]+(:\d+)?(\/|$)/.test(raw) ? `http://${raw}` : DEFAULT_URL;
    const example = origin.startsWith("--") ? `${origin} ${guess}` : `${origin}=${guess}`;
    throw new UsageError(`${origin} must be an http:// or https:// URL, e.g. ${example} (got '${raw}')`);
  }
  return raw;
}

async function readInput(raw: string | undefined): Promise<Record<string, unknown>> {
  if (raw === undefined) {
    return {};
  }
  let text = raw;
  if (raw.startsWith("@")) {
    try {
      text = await readFile(raw.slice(1), "utf8");
    } catch (error) {
      throw new UsageError(`cannot read ${raw.slice(1)}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`--input is not valid JSON, e.g. ${INPUT_EXAMPLE}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`--input must be a JSON object, e.g. ${INPUT_EXAMPLE}`);
  }
  return parsed as Record<string, unknown>;
}

function clientOptions(values: Values, env: Io["env"], from?: string): ClientOptions {
  const baseUrl =
    from !== undefined
      ? serverUrl(from, "--from")
      : values.url !== undefined
        ? serverUrl(values.url, "--url")
        : env.OXP_URL
          ? serverUrl(env.OXP_URL, "OXP_URL")
          : DEFAULT_URL;
  const options: ClientOptions = { baseUrl };
  const apiKey = values["api-key"] ?? env.OXP_API_KEY;
  if (apiKey) {
    options.apiKey = apiKey;
  }
  const secret = values["jwt-secret"] ?? env.OXP_JWT_SECRET;
  if (secret) {
    const audience = values["jwt-audience"] ?? env.OXP_JWT_AUDIENCE;
    const subject = values["jwt-subject"] ?? (env.OXP_JWT_SUBJECT || DEFAULT_JWT_SUBJECT);
    if (subject === "") {
      throw new UsageError("--jwt-subject must not be empty, e.g. --jwt-subject billing-agent");
    }
    options.jwt = { secret, subject, ...(audience ? { audience } : {}) };
  }
  if (values["timeout-ms"] !== undefined) {
    const timeout = Number(values["timeout-ms"]);
    if (!(timeout > 0)) {
      throw new UsageError("--timeout-ms must be a positive number, e.g. --timeout-ms 5000");
    }
    options.timeoutMs = timeout;
  }
  return options;
}

/** The widths of {@link formatTools}'s name and versions columns (a longer value pushes the line on). */
const NAME_WIDTH = 16;
const VERSIONS_WIDTH = 14;
/** Where its description column starts: the lines under a tool's line (its deprecations) start there. */
const DESCRIPTION_COLUMN = 2 + NAME_WIDTH + 1 + VERSIONS_WIDTH + 1;

/** The first line of a catalog's text, or undefined for anything but a non-empty string. */
const firstLine = (text: unknown) =>
  typeof text === "string" && text !== "" ? (text.split("\n")[0] ?? "") : undefined;

/**
 * Tools grouped by toolkit: each tool once, with all its versions and what its highest version requires. Where
 * the server lists annotations (docs/protocol.md 9.2), the highest version's title leads its description, the
 * hints it states follow in brackets, and each deprecated version gets a line with its deprecation message.
 */
export function formatTools(tools: readonly ToolDefinition[]): string {
  const byToolkit = new Map<string, Map<string, ToolDefinition[]>>();
  for (const tool of tools) {
    // Any catalog may come in (this is exported): an id that is no tool id is shown whole, as a toolkit.
    const { toolkit, tool: name } = parseToolId(tool.id) ?? { toolkit: tool.id, tool: "" };
    const names = byToolkit.get(toolkit) ?? new Map<string, ToolDefinition[]>();
    names.set(name, [...(names.get(name) ?? []), tool]);
    byToolkit.set(toolkit, names);
  }
  const lines: string[] = [];
  for (const toolkit of [...byToolkit.keys()].sort()) {
    lines.push(toolkit);
    const names = byToolkit.get(toolkit) as Map<string, ToolDefinition[]>;
    for (const name of [...names.keys()].sort()) {
      // Numeric order: a server may list 1.10.0 before 1.9.0, or the newest first.
      const versions = [...(names.get(name) as ToolDefinition[])].sort((a, b) =>
        compareToolVersions(a.version, b.version),
      );
      const latest = versions.at(-1) as ToolDefinition;
      const needs = [
        ...(latest.requirements?.authorization ?? []).map((auth) => `auth:${auth.id}`),
        ...(latest.requirements?.secrets ?? []).map((secret) => `secret:${secret.id}`),
        ...(latest.requirements?.user_id ? ["user_id"] : []),
      ];
      const description = latest.description.split("\n")[0] ?? "";
      const title = firstLine(latest.annotations?.title);
      const hints = hintWords(latest.annotations);
      const columns = `  ${name.padEnd(NAME_WIDTH)} ${versions
        .map((tool) => tool.version)
        .join(", ")
        .padEnd(VERSIONS_WIDTH)} `;
      const needsText = needs.length ? `  [needs ${needs.join(", ")}]` : "";
      const hintsText = hints.length ? `  [${hints.join(", ")}]` : "";
      lines.push(`${columns}${title ? `${title} — ` : ""}${description}${needsText}${hintsText}`);
      for (const tool of versions) {
        const deprecation = firstLine(tool.deprecation_message);
        if (deprecation !== undefined) {
          lines.push(`${" ".repeat(DESCRIPTION_COLUMN)}${tool.version} is deprecated: ${deprecation}`);
        }
      }
    }
  }
  return `${lines.join("\n")}\n`;
}

function formatFailure(response: Extract<CallToolResponse, { success: false }>): string {
  const { error } = response;
  const lines = [`The tool failed: ${error.message}`];
  if (error.additional_prompt_content) {
    lines.push(`  hint: ${error.additional_prompt_content}`);
  }
  lines.push(
    error.can_retry
      ? `  can retry: yes${error.retry_after_ms !== undefined ? `, after ${error.retry_after_ms} ms` : ""}`
      : "  can retry: no",
  );
  if (error.developer_message) {
    lines.push(`  developer message: ${error.developer_message}`);
  }
  lines.push(`  call id: ${response.call_id}`);
  return `${lines.join("\n")}\n`;
}

/** A catalog from a file: a ToolListResponse, or an array of tools. */
async function readCatalog(from: string): Promise<ToolDefinition[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(from, "utf8"));
  } catch (error) {
    const missing = (error as { code?: unknown }).code === "ENOENT";
    // `--from 127.0.0.1:8080` is a server without its scheme more often than a file of that name.
    if (missing && /^[\w.-]+:\d+(\/|$)/.test(from)) {
      throw new UsageError(`--from must be an http:// or https:// URL or a file, e.g. --from http://${from}`);
    }
    throw new UsageError(
      `cannot read a tool catalog from ${from}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const items = Array.isArray(parsed) ? parsed : (parsed as { items?: unknown }).items;
  if (!Array.isArray(items)) {
    throw new UsageError(`${from} holds neither a ToolListResponse nor an array of tools`);
  }
  return items.map(normalizeToolDefinition) as ToolDefinition[];
}

/** Where generated bindings say they came from: a URL without credentials or query, or a file's name (no local path). */
function sourceOf(from: string): string {
  if (!/^https?:\/\//i.test(from)) {
    return from.replace(/^.*[\\/]/, "");
  }
  const url = new URL(from);
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** What tests (and embedders) may replace when running `otc` in process. */
export interface RunRuntime {
  /**
   * The clock the commands' clients wait on between attempts and polls (`otc connections add --wait`, `otc call
   * --wait-auth`); default the runtime's timers. A test passes one it moves by hand.
   */
  clock?: ClientClock;
  /** Opens a URL in a browser (`otc connections add`); default the platform's opener. */
  openUrl?: (url: string) => Promise<void>;
}

/**
 * Runs the command; resolves with its exit code. Everything it writes goes through terminalSafe: the
 * server's strings (descriptions, values, messages) reach the output in many places, and none may
 * steer the terminal.
 */
export async function run(argv: readonly string[], rawIo: Io, runtime: RunRuntime = {}): Promise<number> {
  const io: Io = {
    ...rawIo,
    stdout: (text) => rawIo.stdout(terminalSafe(text)),
    stderr: (text) => rawIo.stderr(terminalSafe(text)),
  };
  // Commands with options of their own, loaded only when asked for (the MCP SDK is not small).
  if (argv[0] === "mcp") {
    return (await import("./mcp-command.js")).mcpCommand(argv.slice(1), io);
  }
  if (argv[0] === "inspect") {
    return (await import("./inspect-command.js")).inspectCommand(argv.slice(1), io);
  }
  if (argv[0] === "login" || argv[0] === "logout") {
    const { loginCommand, logoutCommand } = await import("./login.js");
    return (argv[0] === "login" ? loginCommand : logoutCommand)(argv.slice(1), io);
  }
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true }));
  } catch (error) {
    return report(new UsageError(parseFailure(argv, error)), io, false);
  }
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === "help") {
    (command === undefined && !values.help ? io.stderr : io.stdout)(HELP);
    return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
  }
  const json = values.json === true;
  const print = (value: unknown) => io.stdout(`${JSON.stringify(value, null, 2)}\n`);
  // The server a connection error is about: the client's error names it, but after undici's bare "fetch failed".
  let target = "";
  // The sign-ins of otc login, read once when a command may need one (no other credential given).
  let signIns: CredentialsFile | undefined;
  const connect = (from?: string) => {
    const options = clientOptions(values, io.env, from);
    if (runtime.clock) {
      options.clock = runtime.clock;
    }
    target = options.baseUrl;
    const key = resourceKey(options.baseUrl);
    const signIn = signIns && Object.hasOwn(signIns.servers, key) ? signIns.servers[key] : undefined;
    if (signIn) {
      options.accessToken = storedSignInProvider({ env: io.env, signIn });
    }
    return createClient(options);
  };

  try {
    if (!(COMMANDS as readonly string[]).includes(command)) {
      throw new UsageError(`unknown command '${command}'${didYouMean(nearest(command, COMMANDS))}`);
    }
    if (command === "mcp" || command === "inspect" || command === "login" || command === "logout") {
      const example =
        command === "mcp" ? "otc mcp serve --url http://127.0.0.1:8080" : `otc ${command} http://127.0.0.1:8080`;
      throw new UsageError(`${command} takes options of its own: name it first, e.g. ${example}`);
    }
    checkArity(command, rest);
    checkPlaces(command, values);
    if (!(values["api-key"] ?? io.env.OXP_API_KEY) && !(values["jwt-secret"] ?? io.env.OXP_JWT_SECRET)) {
      signIns = await readCredentials(io.env);
    }
    switch (command) {
      case "health": {
        const health = await connect().health();
        if (json) {
          print(health);
        } else {
          io.stdout(`${health.healthy ? "healthy" : "not healthy"} (${health.status})\n`);
        }
        return health.healthy ? EXIT.ok : EXIT.toolFailed;
      }
      case "tools": {
        const search = searchOptions(values);
        if (search) {
          return await searchCommand(search, { client: connect(), io, json });
        }
        // Annotations where the server offers them (its discovery document says so); an OXP 1.0 list elsewhere.
        const { toolkit } = values;
        const tools =
          toolkit === undefined
            ? await connect().listTools({ annotations: true })
            : await collect(connect().iterateTools({ annotations: true, toolkit }));
        if (json) {
          print({ items: tools });
        } else {
          io.stdout(formatTools(tools));
        }
        return EXIT.ok;
      }
      case "call":
        return await call(rest[0], values, { io, raw: rawIo.stderr }, { connect, server: () => target });
      case "calls":
        return await calls(rest, values, io, connect);
      case "connections": {
        const { connectionsCommand, parseConnections } = await import("./connections-command.js");
        const action = parseConnections(rest, values);
        if (typeof action === "string") {
          throw new UsageError(action);
        }
        return await connectionsCommand(action, { client: connect(), io, json, openUrl: runtime.openUrl });
      }
      default: {
        // codegen: the only command left.
        if (!values.from || !values.out) {
          throw new UsageError(
            `codegen needs --from <url | tools.json> and --out <file.ts>, e.g. otc codegen --from ${DEFAULT_URL} --out tools.ts`,
          );
        }
        const ids = values.ids === undefined ? undefined : parseIdList(values.ids);
        if (ids === undefined && values.ids !== undefined) {
          throw new UsageError("--ids takes tool ids separated by commas, e.g. --ids Calculator.Add,Gmail.SendEmail@2");
        }
        const fromServer = /^https?:\/\//i.test(values.from);
        let tools: ToolDefinition[];
        if (fromServer) {
          const client = connect(values.from);
          tools = ids ? await toolsByIds(client, ids, target) : await client.listTools({ annotations: true });
        } else {
          const catalog = await readCatalog(values.from);
          tools = ids ? pickTools(catalog, ids, sourceOf(values.from)) : catalog;
        }
        // Loaded only for codegen: json-schema-to-typescript is most of what otc would load to start otherwise.
        const { generateBindings } = await import("./codegen.js");
        await writeFile(values.out, await generateBindings(tools, sourceOf(values.from)));
        io.stdout(`wrote bindings for ${tools.length} tools to ${values.out}\n`);
        return EXIT.ok;
      }
    }
  } catch (error) {
    return report(error, io, json, target);
  }
}

/** `otc call`: the call, authorization challenges (waited for with --wait-auth), and a "did you mean" for unknown tools. */
async function call(
  toolId: string | undefined,
  values: Values,
  output: { io: Io; raw: (text: string) => void },
  target: { connect: () => OxpClient; server: () => string },
): Promise<number> {
  const { connect, server } = target;
  const { io } = output;
  if (!toolId) {
    throw new UsageError(`call needs a tool id, e.g. otc call Calculator.Add ${INPUT_EXAMPLE}`);
  }
  const json = values.json === true;
  const context: CallToolContext = {};
  const secrets = pairs(values.secret, "value", "secret");
  const tokens = pairs(values.token, "token", "token");
  if (secrets.length) {
    context.secrets = secrets;
  }
  if (tokens.length) {
    context.authorization = tokens;
  }
  if (values["user-id"]) {
    context.user_id = values["user-id"];
  }
  const client = connect();
  const request = {
    tool_id: toolId,
    call_id: values["call-id"] ?? crypto.randomUUID(),
    input: await readInput(values.input),
    ...(Object.keys(context).length ? { context } : {}),
  };
  let response: CallToolResponse;
  for (;;) {
    try {
      if (!values.async) {
        response = await client.callTool(request);
        break;
      }
      const outcome = await callAsTask(client, request, output);
      if ("response" in outcome) {
        response = outcome.response;
        break;
      }
      const { status, note } = outcome.interrupted;
      if (status?.status === "completed" && status.result) {
        // It ended before the cancel reached it: its result, as any.
        response = status.result;
        break;
      }
      if (status) {
        if (json) {
          io.stdout(`${JSON.stringify(status, null, 2)}\n`);
        } else {
          io.stdout(`The call was cancelled.\n  call id: ${status.call_id}\n`);
        }
      } else {
        io.stderr(`Interrupted: ${note}\n`);
      }
      return EXIT.interrupted;
    } catch (error) {
      const challenges = error instanceof OxpServerError ? error.authorizationChallenges : [];
      if (challenges.length === 0) {
        if (!(error instanceof OxpServerError) || error instanceof OxpAuthenticationError || error.status !== 400) {
          throw error;
        }
        // The 400 may be about a secret or the request; only the catalog tells whether the tool exists.
        const suggestions = await client.listTools().then(
          (tools) => suggestToolIds(toolId, tools),
          () => [],
        );
        const code = report(error, io, json);
        if (suggestions.length > 0) {
          io.stderr(`  did you mean ${suggestions.join(", ")}?\n`);
        }
        return code;
      }
      for (const challenge of challenges) {
        io.stderr(`Authorization required. Open this URL to continue:\n  ${challenge.url}\n`);
      }
      if (!values["wait-auth"]) {
        throw error;
      }
      // Polling sends the server's credentials: a check_url elsewhere is never asked (the client refuses too).
      const elsewhere = challenges.find(
        (challenge) => challenge.check_url && !sameOrigin(challenge.check_url, server()),
      );
      if (elsewhere) {
        io.stderr(
          `Not waiting: the authorization's check_url (${elsewhere.check_url}) is not on the server's origin, and polling it would send it your credentials. Complete the authorization, then run the call again.\n`,
        );
        return EXIT.refused;
      }
      io.stderr("Waiting for the authorization to complete...\n");
      for (const challenge of challenges) {
        if ((await client.waitForAuthorization(challenge)) === "failed") {
          io.stderr("The authorization was denied or failed.\n");
          return EXIT.refused;
        }
      }
    }
  }
  if (json) {
    io.stdout(`${JSON.stringify(response, null, 2)}\n`);
  } else if (response.success) {
    io.stdout(
      typeof response.value === "string" ? `${response.value}\n` : `${JSON.stringify(response.value, null, 2)}\n`,
    );
  } else {
    io.stdout(formatFailure(response));
  }
  return response.success ? EXIT.ok : EXIT.toolFailed;
}

/** `otc calls get|cancel <call_id>`: a task's status, as JSON. */
async function calls(args: readonly string[], values: Values, io: Io, connect: () => OxpClient): Promise<number> {
  const [action, callId] = args;
  if ((action !== "get" && action !== "cancel") || !callId) {
    throw new UsageError(CALLS_USAGE);
  }
  let waitSeconds: number | undefined;
  if (values["wait-seconds"] !== undefined) {
    waitSeconds = Number(values["wait-seconds"]);
    if (action !== "get" || !(Number.isInteger(waitSeconds) && waitSeconds >= 0 && waitSeconds <= 30)) {
      throw new UsageError(
        "--wait-seconds takes a whole number of seconds from 0 to 30, with otc calls get, e.g. otc calls get <call_id> --wait-seconds 10",
      );
    }
  }
  const client = connect();
  const status =
    action === "get"
      ? await client.callStatus(callId, waitSeconds !== undefined ? { waitSeconds } : {})
      : await client.cancelCall(callId);
  io.stdout(`${JSON.stringify(status, null, 2)}\n`);
  return EXIT.ok;
}

/** Prints an error the way its kind deserves and returns its exit code; `target` is the server tried, if any. */
function report(error: unknown, io: Io, json: boolean, target = ""): number {
  if (error instanceof UsageError) {
    io.stderr(`otc: ${error.message}\nRun 'otc --help' for usage.\n`);
    return EXIT.usage;
  }
  if (error instanceof CredentialsFileError) {
    io.stderr(`otc: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof OxpAccessTokenError) {
    // The stored sign-in's provider says why (and to run otc login); the client's wrapping adds nothing for a user.
    const why = error.cause instanceof Error ? error.cause.message : error.message;
    io.stderr(`Authentication failed: ${why}\n`);
    return EXIT.authentication;
  }
  if (json && (error instanceof OxpServerError || error instanceof OxpValidationError)) {
    io.stdout(
      `${JSON.stringify(error instanceof OxpServerError ? error.body : { message: error.message, parameter_errors: error.parameterErrors }, null, 2)}\n`,
    );
  }
  if (error instanceof OxpValidationError) {
    io.stderr(`Invalid input: ${error.message}\n`);
    for (const [path, message] of Object.entries(error.parameterErrors)) {
      io.stderr(`  ${path}: ${message}\n`);
    }
    return EXIT.invalidInput;
  }
  if (error instanceof OxpAuthenticationError) {
    io.stderr(
      `Authentication failed: ${error.message}${error.developerMessage ? ` (${error.developerMessage})` : ""}\n`,
    );
    return EXIT.authentication;
  }
  if (error instanceof OxpServerError) {
    io.stderr(
      `The server refused the call: ${error.message}${error.developerMessage ? `\n  ${error.developerMessage}` : ""}\n`,
    );
    return EXIT.refused;
  }
  if (error instanceof OxpExtensionUnavailableError) {
    io.stderr(`${error.message}\n`);
    return EXIT.refused;
  }
  if (error instanceof UnknownToolIdsError) {
    io.stderr(`otc: ${error.message}\n`);
    return EXIT.refused;
  }
  if (error instanceof OxpConnectionError) {
    const causes = rootCauses(error.cause ?? error).map((cause) =>
      // undici's whole message for the ports fetch never uses (1, 9, 6000...), which looks like a bug otherwise.
      cause === "bad port" ? "fetch refuses this port (https://fetch.spec.whatwg.org/#port-blocking)" : cause,
    );
    io.stderr(`Could not reach ${target || "the server"}: ${causes.join("; ")}\n`);
    return EXIT.connection;
  }
  if (error instanceof OxpTimeoutError) {
    io.stderr(`${error.message}${target ? ` (${target})` : ""}\n`);
    return EXIT.connection;
  }
  if (error instanceof OxpResponseTooLargeError) {
    io.stderr(
      `The server's answer is too large: otc stopped reading it after ${error.limitBytes} bytes${target ? ` (${target})` : ""}\n`,
    );
    return EXIT.protocol;
  }
  if (error instanceof OxpCrossOriginError) {
    io.stderr(`Refused to follow the server elsewhere: ${error.message}\n`);
    return EXIT.protocol;
  }
  if (error instanceof OxpProtocolError) {
    io.stderr(`The server's answer does not follow the OXP specification: ${error.message}\n`);
    return EXIT.protocol;
  }
  io.stderr(`otc: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT.protocol;
}
