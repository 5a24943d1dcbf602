/** `otc inspect <url>`: serves the OXP Inspector on a local port, pointed at a Tool Server, and opens it in a browser. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { inspector } from "@otc/inspector";
import { EXIT, type Io } from "./io.js";
import { openInBrowser } from "./open-browser.js";
import { stopped } from "./stopped.js";

/** The port `otc inspect` listens on by default: fixed, so a server's CORS settings can name the page's origin once. */
export const DEFAULT_INSPECT_PORT = 6280;

export const INSPECT_HELP = `otc inspect: explore and call the tools of an OXP server in a web page

Usage:
  otc inspect <url> [--port N] [--host H] [--no-open]

  <url>        the Tool Server, e.g. http://127.0.0.1:8080
  --port N     the local port of the page (default ${DEFAULT_INSPECT_PORT}; 0 picks a free one)
  --host H     the local address (default 127.0.0.1)
  --no-open    print the page's URL without opening a browser

The page calls the server from the browser: a server on another origin than the page must allow the
page's origin with CORS (in @otc/server: cors: { origins: ["http://127.0.0.1:${DEFAULT_INSPECT_PORT}"] }).
Credentials typed in the page stay in it; they are never stored. Ctrl+C stops it.
`;

/** What tests (and embedders) may replace. */
export interface InspectOptions {
  /** Stops the page's server; default: SIGINT or SIGTERM. */
  signal?: AbortSignal;
  /** Opens a URL in a browser; default: the platform's opener (open, xdg-open, rundll32). */
  openUrl?: (url: string) => Promise<void>;
  /** Called once the page is served, with its URL. */
  onListening?: (url: string) => void;
}

export { openInBrowser } from "./open-browser.js";

class UsageError extends Error {}

const OPTIONS = {
  port: { type: "string" },
  host: { type: "string" },
  "no-open": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

function parse(argv: readonly string[]) {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
    throw new UsageError(message.charAt(0).toLowerCase() + message.slice(1));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    return { help: true as const };
  }
  const [raw, ...extra] = positionals;
  if (raw === undefined) {
    throw new UsageError("inspect needs the server's URL, e.g. otc inspect http://127.0.0.1:8080");
  }
  if (extra.length > 0) {
    throw new UsageError(`unexpected argument${extra.length > 1 ? "s" : ""} ${extra.join(" ")}`);
  }
  let target: URL;
  try {
    target = new URL(raw);
  } catch {
    throw new UsageError(`<url> must be an http:// or https:// URL, e.g. http://${raw} (got '${raw}')`);
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    throw new UsageError(`<url> must be an http:// or https:// URL (got '${raw}')`);
  }
  if (target.username || target.password) {
    throw new UsageError("<url> must not carry credentials: type the API key or JWT secret in the page");
  }
  const port = values.port === undefined ? DEFAULT_INSPECT_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port must be a port number from 0 to 65535 (got '${values.port}')`);
  }
  return {
    help: false as const,
    url: raw.replace(/\/+$/, ""),
    port,
    host: values.host ?? "127.0.0.1",
    open: values["no-open"] !== true,
  };
}

/**
 * Runs `otc inspect` with the arguments after `inspect`; resolves with the exit code once the page's
 * server stopped: 0, or 2 for a usage error or a port it cannot listen on.
 */
export async function inspectCommand(argv: readonly string[], io: Io, options: InspectOptions = {}): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (error) {
    io.stderr(`otc: ${(error as Error).message}\nRun 'otc inspect --help' for usage.\n`);
    return EXIT.usage;
  }
  if (args.help) {
    io.stdout(INSPECT_HELP);
    return EXIT.ok;
  }
  const { url: target, port, host, open } = args;
  let handler: ReturnType<typeof inspector>;
  try {
    handler = inspector({ serverUrl: target });
  } catch (error) {
    // The page accepts only a plain http(s) origin (it goes into its Content-Security-Policy).
    io.stderr(`otc: ${(error as Error).message}\nRun 'otc inspect --help' for usage.\n`);
    return EXIT.usage;
  }
  const server: Server = createServer((req, res) => {
    // The bare address leads to the page, already pointed at the server.
    if (req.url === "/" && (req.method === "GET" || req.method === "HEAD")) {
      res.writeHead(302, { Location: `/inspector?url=${encodeURIComponent(target)}`, "Content-Length": 0 });
      res.end();
      return;
    }
    handler(req, res);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    io.stderr(
      code === "EADDRINUSE"
        ? `otc: port ${port} on ${host} is in use: pick another, e.g. otc inspect ${target} --port 0\n`
        : `otc: cannot listen on ${host}:${port} (${code ?? (error as Error).message})\n`,
    );
    return EXIT.usage;
  }
  const address = server.address() as AddressInfo;
  const origin = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
  const page = `${origin}/inspector?url=${encodeURIComponent(target)}`;
  io.stdout(`OXP Inspector for ${target}\n  ${page}\n  API reference: ${origin}/docs\n`);
  if (new URL(target).origin !== origin) {
    io.stdout(`  The server must allow the origin ${origin} with CORS.\n`);
  }
  io.stdout("Press Ctrl+C to stop.\n");
  options.onListening?.(page);
  if (open) {
    try {
      await (options.openUrl ?? openInBrowser)(page);
    } catch {
      io.stderr("otc: could not open a browser: open the URL above.\n");
    }
  }
  await stopped(options.signal);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return EXIT.ok;
}
