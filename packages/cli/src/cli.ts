/** The `otc` command: argument parsing, the commands, human and JSON output, exit codes by error kind. */
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import {
  type ClientOptions,
  createClient,
  normalizeToolDefinition,
  OxpAuthenticationError,
  OxpConnectionError,
  OxpProtocolError,
  OxpServerError,
  OxpTimeoutError,
  OxpValidationError,
} from "@otc/client";
import type { CallToolContext, CallToolResponse, ToolDefinition } from "@otc/types";
import { generateBindings } from "./codegen.js";

/** Exit codes, one per kind of outcome; `otc --help` lists them. */
export const EXIT = {
  ok: 0,
  toolFailed: 1,
  usage: 2,
  connection: 3,
  authentication: 4,
  refused: 5,
  invalidInput: 6,
  protocol: 7,
} as const;

/** Where the command writes, and what it reads from its environment. */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
}

export const HELP = `otc: talk to an OXP (Open eXecution Protocol) Tool Server

Usage:
  otc health
  otc tools
  otc call <tool_id> [--input JSON | --input @file.json] [--user-id U]
                     [--secret ID=VALUE]... [--token PROVIDER=TOKEN]... [--call-id ID] [--wait-auth]
  otc codegen --from <url | tools.json> --out <file.ts>

Global options:
  --url URL           the server (env OXP_URL; default http://127.0.0.1:8080)
  --api-key KEY       send an API key in OXP-API-Key (env OXP_API_KEY)
  --jwt-secret S      sign HS256 JWTs with this shared secret (env OXP_JWT_SECRET)
  --jwt-audience A    the JWT's aud claim (env OXP_JWT_AUDIENCE)
  --timeout-ms N      time limit of one attempt (default 60000)
  --json              print the server's JSON answers as they are
  -h, --help          this text

call:
  --wait-auth         when the tool needs an authorization, show its URL, wait until it is
                      completed, then retry the same call

Exit codes:
  0  success
  1  the tool ran and failed (success: false), or the server is not healthy
  2  usage error (unknown command or option, bad --input JSON, unreadable file)
  3  the server could not be reached, or did not answer in time
  4  authentication failed (401)
  5  the server refused the call (400: unknown tool, missing requirement or authorization)
  6  invalid input (422)
  7  the server's answer does not follow the OXP specification
`;

class UsageError extends Error {}

const OPTIONS = {
  url: { type: "string" },
  "api-key": { type: "string" },
  "jwt-secret": { type: "string" },
  "jwt-audience": { type: "string" },
  "timeout-ms": { type: "string" },
  json: { type: "boolean" },
  input: { type: "string" },
  "user-id": { type: "string" },
  secret: { type: "string", multiple: true },
  token: { type: "string", multiple: true },
  "call-id": { type: "string" },
  "wait-auth": { type: "boolean" },
  from: { type: "string" },
  out: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

/** `ID=VALUE` pairs into `{id, <field>}` objects. */
function pairs<F extends "value" | "token">(items: readonly string[] | undefined, field: F, flag: string) {
  return (items ?? []).map((item) => {
    const at = item.indexOf("=");
    if (at <= 0) throw new UsageError(`--${flag} takes ID=VALUE, got '${item}'`);
    return { id: item.slice(0, at), [field]: item.slice(at + 1) } as { id: string } & Record<F, string>;
  });
}

async function readInput(raw: string | undefined): Promise<Record<string, unknown>> {
  if (raw === undefined) return {};
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
    throw new UsageError("--input is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new UsageError("--input must be a JSON object");
  return parsed as Record<string, unknown>;
}

function clientOptions(values: Values, env: Io["env"]): ClientOptions {
  const options: ClientOptions = { baseUrl: values.url ?? env.OXP_URL ?? "http://127.0.0.1:8080" };
  const apiKey = values["api-key"] ?? env.OXP_API_KEY;
  if (apiKey) options.apiKey = apiKey;
  const secret = values["jwt-secret"] ?? env.OXP_JWT_SECRET;
  if (secret) {
    const audience = values["jwt-audience"] ?? env.OXP_JWT_AUDIENCE;
    options.jwt = { secret, ...(audience ? { audience } : {}) };
  }
  if (values["timeout-ms"] !== undefined) {
    const timeout = Number(values["timeout-ms"]);
    if (!(timeout > 0)) throw new UsageError("--timeout-ms must be a positive number");
    options.timeoutMs = timeout;
  }
  return options;
}

/** Tools grouped by toolkit: each tool once, with all its versions and what it requires. */
export function formatTools(tools: readonly ToolDefinition[]): string {
  const byToolkit = new Map<string, Map<string, ToolDefinition[]>>();
  for (const tool of tools) {
    const [qualified = ""] = tool.id.split("@");
    const [toolkit = "", name = ""] = qualified.split(".");
    const names = byToolkit.get(toolkit) ?? new Map<string, ToolDefinition[]>();
    names.set(name, [...(names.get(name) ?? []), tool]);
    byToolkit.set(toolkit, names);
  }
  const lines: string[] = [];
  for (const toolkit of [...byToolkit.keys()].sort()) {
    lines.push(toolkit);
    const names = byToolkit.get(toolkit) as Map<string, ToolDefinition[]>;
    for (const name of [...names.keys()].sort()) {
      const versions = (names.get(name) as ToolDefinition[]).map((tool) => tool.version);
      const latest = (names.get(name) as ToolDefinition[]).at(-1) as ToolDefinition;
      const needs = [
        ...(latest.requirements?.authorization ?? []).map((auth) => `auth:${auth.id}`),
        ...(latest.requirements?.secrets ?? []).map((secret) => `secret:${secret.id}`),
        ...(latest.requirements?.user_id ? ["user_id"] : []),
      ];
      const description = latest.description.split("\n")[0] ?? "";
      lines.push(
        `  ${name.padEnd(16)} ${versions.join(", ").padEnd(14)} ${description}${needs.length ? `  [needs ${needs.join(", ")}]` : ""}`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}

function formatFailure(response: Extract<CallToolResponse, { success: false }>): string {
  const { error } = response;
  const lines = [`The tool failed: ${error.message}`];
  if (error.additional_prompt_content) lines.push(`  hint: ${error.additional_prompt_content}`);
  lines.push(
    error.can_retry
      ? `  can retry: yes${error.retry_after_ms !== undefined ? `, after ${error.retry_after_ms} ms` : ""}`
      : "  can retry: no",
  );
  if (error.developer_message) lines.push(`  developer message: ${error.developer_message}`);
  lines.push(`  call id: ${response.call_id}`);
  return `${lines.join("\n")}\n`;
}

async function loadCatalog(from: string, values: Values, env: Io["env"]): Promise<ToolDefinition[]> {
  if (/^https?:\/\//.test(from)) return createClient({ ...clientOptions(values, env), baseUrl: from }).listTools();
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(from, "utf8"));
  } catch (error) {
    throw new UsageError(
      `cannot read a tool catalog from ${from}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const items = Array.isArray(parsed) ? parsed : (parsed as { items?: unknown }).items;
  if (!Array.isArray(items)) throw new UsageError(`${from} holds neither a ToolListResponse nor an array of tools`);
  return items.map(normalizeToolDefinition) as ToolDefinition[];
}

/** Runs the command; resolves with its exit code. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true }));
  } catch (error) {
    io.stderr(`otc: ${error instanceof Error ? error.message : String(error)}\n\n${HELP}`);
    return EXIT.usage;
  }
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === "help") {
    (command === undefined && !values.help ? io.stderr : io.stdout)(HELP);
    return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
  }
  const json = values.json === true;
  const print = (value: unknown) => io.stdout(`${JSON.stringify(value, null, 2)}\n`);

  try {
    switch (command) {
      case "health": {
        const health = await createClient(clientOptions(values, io.env)).health();
        if (json) print(health);
        else io.stdout(`${health.healthy ? "healthy" : "not healthy"} (${health.status})\n`);
        return health.healthy ? EXIT.ok : EXIT.toolFailed;
      }
      case "tools": {
        const tools = await createClient(clientOptions(values, io.env)).listTools();
        if (json) print({ items: tools });
        else io.stdout(formatTools(tools));
        return EXIT.ok;
      }
      case "call": {
        const toolId = rest[0];
        if (!toolId)
          throw new UsageError('otc call needs a tool id, e.g. otc call Calculator.Add --input \'{"a": 1, "b": 2}\'');
        const context: CallToolContext = {};
        const secrets = pairs(values.secret, "value", "secret");
        const tokens = pairs(values.token, "token", "token");
        if (secrets.length) context.secrets = secrets;
        if (tokens.length) context.authorization = tokens;
        if (values["user-id"]) context.user_id = values["user-id"];
        const client = createClient(clientOptions(values, io.env));
        const request = {
          tool_id: toolId,
          call_id: values["call-id"] ?? crypto.randomUUID(),
          input: await readInput(values.input),
          ...(Object.keys(context).length ? { context } : {}),
        };
        let response: CallToolResponse;
        for (;;) {
          try {
            response = await client.callTool(request);
            break;
          } catch (error) {
            const challenges = error instanceof OxpServerError ? error.authorizationChallenges : [];
            if (challenges.length === 0) throw error;
            for (const challenge of challenges) {
              io.stderr(`Authorization required. Open this URL to continue:\n  ${challenge.url}\n`);
            }
            if (!values["wait-auth"]) throw error;
            io.stderr("Waiting for the authorization to complete...\n");
            for (const challenge of challenges) {
              if ((await client.waitForAuthorization(challenge)) === "failed") {
                io.stderr("The authorization was denied or failed.\n");
                return EXIT.refused;
              }
            }
          }
        }
        if (json) print(response);
        else if (response.success) {
          io.stdout(
            typeof response.value === "string" ? `${response.value}\n` : `${JSON.stringify(response.value, null, 2)}\n`,
          );
        } else io.stdout(formatFailure(response));
        return response.success ? EXIT.ok : EXIT.toolFailed;
      }
      case "codegen": {
        if (!values.from || !values.out)
          throw new UsageError("otc codegen needs --from <url | tools.json> and --out <file.ts>");
        const tools = await loadCatalog(values.from, values, io.env);
        await writeFile(values.out, await generateBindings(tools, values.from.replace(/^.*[\\/]/, "")));
        io.stdout(`wrote bindings for ${tools.length} tools to ${values.out}\n`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (error) {
    return report(error, io, json);
  }
}

/** Prints an error the way its kind deserves and returns its exit code. */
function report(error: unknown, io: Io, json: boolean): number {
  if (error instanceof UsageError) {
    io.stderr(`otc: ${error.message}\n`);
    return EXIT.usage;
  }
  if (json && (error instanceof OxpServerError || error instanceof OxpValidationError)) {
    io.stdout(
      `${JSON.stringify(error instanceof OxpServerError ? error.body : { message: error.message, parameter_errors: error.parameterErrors }, null, 2)}\n`,
    );
  }
  if (error instanceof OxpValidationError) {
    io.stderr(`Invalid input: ${error.message}\n`);
    for (const [path, message] of Object.entries(error.parameterErrors)) io.stderr(`  ${path}: ${message}\n`);
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
  if (error instanceof OxpConnectionError || error instanceof OxpTimeoutError) {
    io.stderr(`${error.message}\n`);
    return EXIT.connection;
  }
  if (error instanceof OxpProtocolError) {
    io.stderr(`The server's answer does not follow the OXP specification: ${error.message}\n`);
    return EXIT.protocol;
  }
  io.stderr(`otc: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT.protocol;
}
