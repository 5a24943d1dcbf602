/** The node handler that serves the Inspector at /inspector and the API reference at /docs, from the package's built files. */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import vary from "vary";
import {
  createInspectorCore,
  type InspectorAnswer,
  type InspectorFiles,
  jsonError,
  servedType,
} from "./internal/inspector-core.js";

/** Options of {@link inspector}. */
export interface InspectorOptions {
  /**
   * The server the page connects to when its URL has no `?url=`. Default: the server the page is
   * served by (its origin, and the prefix it is mounted under). An http(s) URL whose host is a plain
   * name or IP address: its origin goes into the page's Content-Security-Policy, so anything else
   * makes {@link inspector} throw.
   */
  serverUrl?: string;
  /** Where the built files are. Default: the package's own `dist` folder. */
  distDir?: string;
}

/**
 * A node request handler: an Express middleware (`createServer`'s `nodePages`), one of `createHandler`'s
 * `nodePages`, or the whole handler of a `node:http` server. It calls `next()` for every path it does not
 * serve; without `next`, it answers those with a JSON 404.
 */
export type InspectorHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

/** The built files: `dist/ui` (the Vite app) and `dist/docs` (Scalar's bundle and the page's script). */
function defaultDistDir(): string {
  // From dist/handler.js or src/handler.ts alike, the package's dist folder.
  return fileURLToPath(new URL("../dist/", import.meta.url));
}

/**
 * Reads the Inspector's build from `distDir` (default: the package's own `dist` folder) with `node:fs`: the `files` of
 * {@link inspectorPage} on Node, Bun and Deno. Undefined while the package is not built.
 *
 * @example
 * createFetchHandler({ tools, pages: [inspectorPage({ files: readInspectorFiles })] });
 */
export function readInspectorFiles(distDir: string = defaultDistDir()): InspectorFiles | undefined {
  const index = join(distDir, "ui", "index.html");
  if (!existsSync(index) || !existsSync(join(distDir, "docs", "manifest.json"))) {
    return undefined;
  }
  const files: Record<string, Uint8Array> = { "ui/index.html": readFileSync(index) };
  for (const folder of ["ui/assets", "docs"]) {
    const dir = join(distDir, folder);
    if (!existsSync(dir)) {
      continue;
    }
    // Only the files it serves (not below, no source maps): nothing else is read into memory.
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isFile() && servedType(entry.name)) {
        files[`${folder}/${entry.name}`] = readFileSync(join(dir, entry.name));
      }
    }
  }
  return files;
}

/**
 * The path and query of a request target, its authority ignored: origin-form (`/inspector?url=...`)
 * is read below a fixed host, so `//evil.example/inspector` stays a path, not a host; absolute-form
 * (`http://evil.example/inspector`, which proxies send and servers must accept) keeps only its path.
 */
function targetOf(raw: string): URL | undefined {
  try {
    if (raw.startsWith("/")) {
      return new URL(`http://h${raw}`);
    }
    const url = new URL(raw);
    return url.protocol === "http:" || url.protocol === "https:"
      ? new URL(`http://h${url.pathname}${url.search}`)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The prefix the handler is mounted under: Express strips it from `req.url` and keeps the whole path in
 * `originalUrl`; a plain node server has no prefix. Undefined when it is not a plain path below this
 * origin: the pages put it in front of their scripts' URLs, and `//host` there would load them from
 * another host.
 */
function mountPrefix(req: IncomingMessage, path: string): string | undefined {
  const original = (req as IncomingMessage & { originalUrl?: string }).originalUrl;
  if (!original) {
    return "";
  }
  const originalPath = targetOf(original)?.pathname;
  if (originalPath === undefined || !originalPath.endsWith(path)) {
    return undefined;
  }
  const base = originalPath.slice(0, originalPath.length - path.length);
  return base === "" || (base.startsWith("/") && !base.startsWith("//")) ? base : undefined;
}

/** Writes an answer; a HEAD gets its headers and no body. */
function write(req: IncomingMessage, res: ServerResponse, answer: InspectorAnswer): void {
  // Added to what an earlier handler set (CORS varies by Origin), not in place of it.
  if (answer.vary) {
    vary(res, answer.vary);
  }
  for (const [name, value] of Object.entries(answer.headers)) {
    res.setHeader(name, value);
  }
  res.statusCode = answer.status;
  res.end(req.method === "HEAD" ? undefined : answer.body);
}

/**
 * Returns the handler serving the OXP Inspector at `/inspector` and the project's API reference at
 * `/docs` (Scalar), every file from the package: no CDN, works offline. The same answers as
 * {@link inspectorPage}, for node-style hosts; its links start with the prefix it is mounted under.
 *
 * @throws TypeError when `serverUrl` is not an http(s) URL with a plain host name.
 * @example
 * createServer({ tools, nodePages: [inspector()] }); // http://127.0.0.1:8080/inspector and /docs
 * createHandler({ tools, nodePages: [inspector()] }); // the same on plain node:http
 */
export function inspector(options: InspectorOptions = {}): InspectorHandler {
  const distDir = options.distDir ?? defaultDistDir();
  const answer = createInspectorCore({
    serverUrl: options.serverUrl,
    files: () => readInspectorFiles(distDir),
    caller: "inspector()",
  });
  return (req, res, next) => {
    const pass = () => {
      if (next) {
        next();
      } else {
        write(req, res, jsonError(404, "Not found"));
      }
    };
    const url = targetOf(req.url ?? "/");
    if (!url) {
      pass();
      return;
    }
    const mount = (path: string) => mountPrefix(req, path);
    answer({ method: req.method ?? "GET", url, acceptEncoding: req.headers["accept-encoding"], mount })
      .then((answered) => (answered ? write(req, res, answered) : pass()))
      .catch((error: unknown) => {
        // A build that cannot be read, say: the server's error handler answers it; alone, a JSON 500.
        if (next) {
          next(error);
        } else if (res.headersSent) {
          res.destroy();
        } else {
          write(req, res, jsonError(500, "Internal server error"));
        }
      });
  };
}
