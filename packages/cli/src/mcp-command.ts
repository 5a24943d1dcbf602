/** `otc mcp serve`: an OXP server's tools as an MCP server, over stdio or streamable HTTP (@otc/mcp). */
import type { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";
import {
  createMcpBridge,
  type HttpOAuthOptions,
  isLoopbackHost,
  type McpBridgeOptions,
  MIN_TOKEN_LENGTH,
  serveHttp,
  serveStdio,
} from "@otc/mcp";
import { EXIT, type Io } from "./io.js";
import { stopped } from "./stopped.js";

/** The `sub` of the JWTs `otc mcp serve` signs when neither --jwt-subject nor OXP_JWT_SUBJECT names one. */
export const DEFAULT_MCP_JWT_SUBJECT = "otc-mcp";

export const MCP_HELP = `otc mcp serve: serve an OXP server's tools to MCP clients

Usage:
  otc mcp serve --url <oxp server> [--transport stdio|http] [--port N] [--host H]
                [--tool-versions latest|all] [--tool-search] [--user-id U]
                [--oauth-issuer URL]... [--resource URL]

Options:
  --url URL              the OXP server (env OXP_URL; default http://127.0.0.1:8080)
  --api-key KEY          API key for the OXP server (env OXP_API_KEY)
  --jwt-secret S         sign HS256 JWTs for the OXP server (env OXP_JWT_SECRET)
  --jwt-audience A       the JWT's aud claim (env OXP_JWT_AUDIENCE)
  --jwt-subject S        the JWT's sub claim, who is calling (env OXP_JWT_SUBJECT;
                         default ${DEFAULT_MCP_JWT_SUBJECT})
  --transport T          stdio (default): for an MCP host that starts this command;
                         http: streamable HTTP (stateless) at POST /mcp
  --port N               http only; default 3000
  --host H               http only; default 127.0.0.1 (this machine only); any other
                         host needs a token
  --http-token T         http only: MCP clients must send Authorization: Bearer T
                         (env OXP_MCP_TOKEN; at least 16 characters)
  --oauth-issuer URL     http only: MCP clients sign their users in with this OAuth
                         authorization server (issuer URL; repeat for several) and
                         send its access tokens; each call is made for the token's
                         user (sub), with this command's OXP credentials
  --resource URL         with --oauth-issuer: the URL MCP clients reach the endpoint
                         at, which tokens must name as their audience (default the
                         endpoint's own URL; required with another --host)
  --tool-versions V      latest (default): each tool's highest version;
                         all: older versions too, as Toolkit_Tool_v1_0_0
  --tool-search          also list search-tools and load-tools, for MCP hosts without
                         tool search of their own (the OXP server must offer search)
  --user-id U            the end user the calls are made for (env OXP_USER_ID),
                         for tools that require one
  -h, --help             this text

Give the API key, the JWT secret and the token in the environment rather than as
flags: other users of the machine can read a command's flags in the process list.

The OXP credentials stay in this process: MCP clients never see them. Over http,
whoever can send requests to the endpoint calls tools with them (and with the user
id): on 127.0.0.1 that is this machine only; with a token, only clients that have it.
With --oauth-issuer, each client's user signs in: the endpoint serves its OAuth
protected resource metadata at /.well-known/oauth-protected-resource/mcp, and a
user's access token stays here (the OXP server sees this command's credentials and
the user's id). tools/list needs the scope oxp:tools:read, tools/call oxp:tools:call
and the OXP tool's required_scopes.
With stdio, standard output carries the protocol; messages go to standard error.
`;

const OPTIONS = {
  url: { type: "string" },
  "api-key": { type: "string" },
  "jwt-secret": { type: "string" },
  "jwt-audience": { type: "string" },
  "jwt-subject": { type: "string" },
  transport: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  "tool-versions": { type: "string" },
  "tool-search": { type: "boolean" },
  "user-id": { type: "string" },
  "http-token": { type: "string" },
  "oauth-issuer": { type: "string", multiple: true },
  resource: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** What `otc mcp` needs besides `Io`: the protocol's streams for stdio, and a way to stop an HTTP server. */
export interface McpCommandRuntime {
  /** Default process.stdin. */
  stdin?: Readable;
  /** Default process.stdout: with stdio it carries the protocol, so `io.stdout` is never written then. */
  stdout?: Writable;
  /** Stops the server; by default SIGINT and SIGTERM do. */
  signal?: AbortSignal;
}

class McpUsageError extends Error {}

/**
 * A URL as it may be shown: any password (`user:password@`) replaced by `***`. Works on text that is
 * not a valid URL too, since that is when it gets shown.
 */
function maskUrl(raw: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(raw)?.[0] ?? (raw.startsWith("//") ? "//" : "");
  const rest = raw.slice(scheme.length);
  // The last `@` ends the user info: a password may itself hold `@`, `/` or `:`.
  const at = rest.lastIndexOf("@");
  if (at < 0) {
    return raw;
  }
  const colon = rest.indexOf(":");
  if (colon < 0 || colon > at) {
    return raw;
  }
  return `${scheme}${rest.slice(0, colon)}:***${rest.slice(at)}`;
}

/** A base URL fetch can use, or a usage error naming where it came from (its password masked). */
function serverUrl(raw: string, origin: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== "http:" && url?.protocol !== "https:") {
    throw new McpUsageError(
      `${origin} must be an http:// or https:// URL, e.g. http://127.0.0.1:8080 (got '${maskUrl(raw)}')`,
    );
  }
  if (url.username || url.password) {
    // fetch refuses URLs with credentials, and a URL is no place for them anyway.
    throw new McpUsageError(
      `${origin} must not hold credentials (user:password@); use OXP_API_KEY or OXP_JWT_SECRET (got '${maskUrl(raw)}')`,
    );
  }
  return raw;
}

/** The bridge's options from the command line and the environment; credentials from either, never echoed. */
function bridgeOptions(
  values: Record<string, string | boolean | string[] | undefined>,
  env: Io["env"],
): McpBridgeOptions {
  const text = (name: string) => values[name] as string | undefined;
  const url = text("url") !== undefined ? serverUrl(text("url") as string, "--url") : env.OXP_URL;
  const options: McpBridgeOptions = {
    url: url ? serverUrl(url, "OXP_URL") : "http://127.0.0.1:8080",
  };
  const apiKey = text("api-key") ?? env.OXP_API_KEY;
  const secret = text("jwt-secret") ?? env.OXP_JWT_SECRET;
  if (apiKey && secret) {
    throw new McpUsageError("give --api-key or --jwt-secret, not both");
  }
  if (apiKey) {
    options.apiKey = apiKey;
  }
  if (secret) {
    const audience = text("jwt-audience") ?? env.OXP_JWT_AUDIENCE;
    const subject = text("jwt-subject") ?? (env.OXP_JWT_SUBJECT || DEFAULT_MCP_JWT_SUBJECT);
    if (subject === "") {
      throw new McpUsageError("--jwt-subject must not be empty, e.g. --jwt-subject billing-agent");
    }
    options.jwt = { secret, subject, ...(audience ? { audience } : {}) };
  }
  const versions = text("tool-versions") ?? "latest";
  if (versions !== "latest" && versions !== "all") {
    throw new McpUsageError(`--tool-versions must be latest or all (got '${versions}')`);
  }
  options.toolVersions = versions;
  if (values["tool-search"] === true) {
    options.toolSearch = true;
  }
  const userId = text("user-id") ?? env.OXP_USER_ID;
  if (userId) {
    options.userId = userId;
  }
  return options;
}

/** The HTTP bridge's OAuth settings from --oauth-issuer and --resource; undefined without an issuer. */
function oauthOptions(
  issuers: readonly string[] | undefined,
  resource: string | undefined,
  transport: string,
): HttpOAuthOptions | undefined {
  if (issuers === undefined || issuers.length === 0) {
    if (resource !== undefined) {
      throw new McpUsageError("--resource goes with --oauth-issuer");
    }
    return undefined;
  }
  if (transport !== "http") {
    throw new McpUsageError("--oauth-issuer needs --transport http");
  }
  for (const issuer of issuers) {
    serverUrl(issuer, "--oauth-issuer");
  }
  return {
    authorizationServers: issuers,
    ...(resource === undefined ? {} : { resource: serverUrl(resource, "--resource") }),
  };
}

/**
 * Runs `otc mcp <argv>` (argv without the leading `mcp`); resolves with the exit code once the server
 * stops: when the MCP client closes stdin (stdio), or on SIGINT/SIGTERM or `runtime.signal` (http).
 */
export async function mcpCommand(argv: readonly string[], io: Io, runtime: McpCommandRuntime = {}): Promise<number> {
  const usage = (message: string) => {
    io.stderr(`otc mcp: ${message}\nRun 'otc mcp --help' for usage.\n`);
    return EXIT.usage;
  };
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    return usage((error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "bad arguments");
  }
  const { values, positionals } = parsed;
  const [subcommand, ...extra] = positionals;
  if (values.help) {
    // With stdio the protocol owns stdout, but --help starts no server: stdout is free.
    io.stdout(MCP_HELP);
    return EXIT.ok;
  }
  if (subcommand !== "serve") {
    return usage(subcommand === undefined ? "missing subcommand: otc mcp serve" : `unknown subcommand '${subcommand}'`);
  }
  if (extra.length > 0) {
    return usage(`unexpected argument '${extra[0]}': otc mcp serve takes options only`);
  }

  let options: McpBridgeOptions;
  let port = 3000;
  let token: string | undefined;
  let oauth: HttpOAuthOptions | undefined;
  const host = values.host ?? "127.0.0.1";
  const transport = values.transport ?? "stdio";
  try {
    options = bridgeOptions(values, io.env);
    if (transport !== "stdio" && transport !== "http") {
      throw new McpUsageError(`--transport must be stdio or http (got '${transport}')`);
    }
    if (
      transport === "stdio" &&
      (values.port !== undefined || values.host !== undefined || values["http-token"] !== undefined)
    ) {
      throw new McpUsageError("--port, --host and --http-token need --transport http");
    }
    oauth = oauthOptions(values["oauth-issuer"], values.resource, transport);
    if (values.port !== undefined) {
      port = Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65_535) {
        throw new McpUsageError(`--port must be a port number (got '${values.port}')`);
      }
    }
    if (transport === "http") {
      token = values["http-token"] ?? (io.env.OXP_MCP_TOKEN || undefined);
      if (token !== undefined && (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))) {
        throw new McpUsageError(`the HTTP token must be at least ${MIN_TOKEN_LENGTH} characters, without spaces`);
      }
      if (oauth && token !== undefined) {
        throw new McpUsageError("give --oauth-issuer or an HTTP token (--http-token, OXP_MCP_TOKEN), not both");
      }
      if (oauth && options.userId !== undefined) {
        throw new McpUsageError("--user-id does not go with --oauth-issuer: each call is for the signed-in user");
      }
      if (!isLoopbackHost(host) && token === undefined && !oauth) {
        throw new McpUsageError(
          `--host ${host} is reachable from other machines: give a token (env OXP_MCP_TOKEN or --http-token), which MCP clients send as Authorization: Bearer <token>, or sign users in with --oauth-issuer`,
        );
      }
      if (!isLoopbackHost(host) && oauth && oauth.resource === undefined) {
        throw new McpUsageError(
          `--host ${host}: give --resource, the URL MCP clients reach the endpoint at (e.g. https://mcp.example.com/mcp)`,
        );
      }
    }
  } catch (error) {
    if (error instanceof McpUsageError) {
      return usage(error.message);
    }
    throw error;
  }

  const bridge = createMcpBridge(options);
  // The bridge checks what it needs of the OXP server (the search extension, for --tool-search) before it serves.
  try {
    await bridge.ready(runtime.signal);
  } catch (error) {
    io.stderr(`otc mcp: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.usage;
  }
  if (transport === "stdio") {
    const served = await serveStdio(bridge, {
      ...(runtime.stdin ? { stdin: runtime.stdin } : {}),
      ...(runtime.stdout ? { stdout: runtime.stdout } : {}),
    });
    io.stderr(`otc mcp: serving ${new URL(options.url).origin} over stdio\n`);
    await Promise.race([served.closed, runtime.signal ? stopped(runtime.signal) : served.closed]);
    await served.close();
    return EXIT.ok;
  }
  let served: Awaited<ReturnType<typeof serveHttp>>;
  try {
    served = await serveHttp(bridge, {
      port,
      host,
      ...(token === undefined ? {} : { token }),
      ...(oauth === undefined
        ? {}
        : {
            oauth,
            logger: {
              warn: (fields, message) => io.stderr(`otc mcp: ${message ?? "warning"} ${JSON.stringify(fields)}\n`),
            },
          }),
    });
  } catch (error) {
    io.stderr(`otc mcp: cannot listen: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.usage;
  }
  const access =
    served.resourceMetadataUrl !== undefined
      ? `OAuth access tokens required; metadata at ${served.resourceMetadataUrl}`
      : token === undefined
        ? "no token"
        : "bearer token required";
  io.stderr(
    `otc mcp: serving ${new URL(options.url).origin} at ${served.url} (streamable HTTP, stateless, ${access})\n`,
  );
  await stopped(runtime.signal);
  await served.close();
  return EXIT.ok;
}
