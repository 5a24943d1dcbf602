/** The node handler that serves the Inspector at /inspector and the API reference at /docs, from the package's built files. */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { openapiDocument } from "@otc/types";
import escapeHtml from "escape-html";
import Negotiator from "negotiator";
import vary from "vary";

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
 * A node request handler: an Express middleware (`createServer`'s `pages`), one of `createHandler`'s
 * `pages`, or the whole handler of a `node:http` server. It calls `next()` for every path it does not
 * serve; without `next`, it answers those with a JSON 404.
 */
export type InspectorHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

/** One file kept in memory, with its gzipped form made on first use. */
interface Asset {
  body: Buffer;
  type: string;
  gzipped?: Buffer;
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** Hashed file names never change content: a year, immutable. Pages and the document are revalidated every time. */
const IMMUTABLE = "public, max-age=31536000, immutable";
const NO_CACHE = "no-cache";

/**
 * The Inspector's policy. `'unsafe-eval'`: the form's validator (Ajv, inside @rjsf/validator-ajv8)
 * compiles each tool's input schema to a function at run time; there is no other way to validate a
 * schema the page only learns when it lists tools. `connect-src` names the servers the page may call:
 * its own origin, the `?url=` it was opened with and the configured one, nothing else.
 */
function inspectorPolicy(connect: readonly string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self' 'unsafe-eval'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${["'self'", ...connect].join(" ")}`,
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; ");
}

/**
 * The reference's policy. Scalar injects its stylesheet in a `<style>` element that takes the nonce of
 * `<meta property="csp-nonce">`; its components also set inline styles, hence `'unsafe-inline'` for
 * styles only (a nonce would make browsers ignore it, so it is left out). Scripts: 'self' only.
 */
const DOCS_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** JSON safe inside a `<script type="application/json">`: no `<` can close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c");

/**
 * What a source expression of the policy may hold: scheme, host and port, nothing else. URL.origin
 * lets `*`, `;`, `,` and `'` through in host names, and each would change the policy it is written
 * into (`http://*` allows every host, `http://a;sandbox` adds a directive).
 */
const SAFE_ORIGIN = /^https?:\/\/(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d+)?$/i;

/** The origin of an http(s) URL when it is safe to write into the policy, or undefined. */
function originOf(raw: string | undefined | null): string | undefined {
  if (!raw) return undefined;
  try {
    const { origin } = new URL(raw);
    return SAFE_ORIGIN.test(origin) ? origin : undefined;
  } catch {
    return undefined;
  }
}

/** The built files: `dist/ui` (the Vite app) and `dist/docs` (Scalar's bundle and the page's script). */
function defaultDistDir(): string {
  // From dist/handler.js or src/handler.ts alike, the package's dist folder.
  return fileURLToPath(new URL("../dist/", import.meta.url));
}

/** Reads every file of a folder (not below) into memory. */
function readFolder(dir: string): Map<string, Asset> {
  const files = new Map<string, Asset>();
  if (!existsSync(dir)) return files;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isFile() || entry.name.endsWith(".map")) continue;
    const type = TYPES[extname(entry.name)];
    if (type) files.set(entry.name, { body: readFileSync(join(dir, entry.name)), type });
  }
  return files;
}

interface Built {
  inspectorHtml: string;
  uiAssets: Map<string, Asset>;
  docsAssets: Map<string, Asset>;
  docsManifest: { scalar: string; init: string; style: string };
  openapiJson: Asset;
}

/** Loads the build once; undefined when the package was not built (the handler then answers 503). */
function load(distDir: string): Built | undefined {
  const indexPath = join(distDir, "ui", "index.html");
  const manifestPath = join(distDir, "docs", "manifest.json");
  if (!existsSync(indexPath) || !existsSync(manifestPath)) return undefined;
  return {
    inspectorHtml: readFileSync(indexPath, "utf8"),
    uiAssets: readFolder(join(distDir, "ui", "assets")),
    docsAssets: readFolder(join(distDir, "docs")),
    docsManifest: JSON.parse(readFileSync(manifestPath, "utf8")),
    openapiJson: { body: Buffer.from(JSON.stringify(openapiDocument)), type: TYPES[".json"] as string },
  };
}

/**
 * True when the request's Accept-Encoding prefers gzip to sending the file as is (negotiator weighs the q-values:
 * an explicit `gzip;q=0` refuses it even when `*` is accepted). `x-gzip` is read as `gzip`, its alias (RFC 9110
 * section 8.4.1.3), which negotiator does not know.
 */
function acceptsGzip(req: IncomingMessage): boolean {
  const accept = req.headers["accept-encoding"];
  const headers = { "accept-encoding": accept?.replace(/\bx-gzip\b/gi, "gzip") };
  return new Negotiator({ headers }).encoding(["gzip", "identity"]) === "gzip";
}

function securityHeaders(res: ServerResponse, policy: string): void {
  res.setHeader("Content-Security-Policy", policy);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("Cross-Origin-Opener-Policy", "same-origin-allow-popups");
}

function send(req: IncomingMessage, res: ServerResponse, asset: Asset, cache: string): void {
  res.setHeader("Content-Type", asset.type);
  res.setHeader("Cache-Control", cache);
  // Added to what an earlier handler set (CORS varies by Origin), not in place of it.
  vary(res, "Accept-Encoding");
  let body = asset.body;
  // Small files are not worth a gzip header; Scalar's bundle shrinks from 4 MB to about 1 MB.
  if (asset.body.length > 1024 && acceptsGzip(req)) {
    asset.gzipped ??= gzipSync(asset.body);
    body = asset.gzipped;
    res.setHeader("Content-Encoding", "gzip");
  }
  res.setHeader("Content-Length", body.length);
  res.statusCode = 200;
  res.end(req.method === "HEAD" ? undefined : body);
}

function sendJsonError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) {
  const body = JSON.stringify({ message });
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Cache-Control", "no-store");
  res.end(body);
}

/**
 * The path and query of a request target, its authority ignored: origin-form (`/inspector?url=...`)
 * is read below a fixed host, so `//evil.example/inspector` stays a path, not a host; absolute-form
 * (`http://evil.example/inspector`, which proxies send and servers must accept) keeps only its path.
 */
function targetOf(raw: string): URL | undefined {
  try {
    if (raw.startsWith("/")) return new URL(`http://h${raw}`);
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
  if (!original) return "";
  const originalPath = targetOf(original)?.pathname;
  if (originalPath === undefined || !originalPath.endsWith(path)) return undefined;
  const base = originalPath.slice(0, originalPath.length - path.length);
  return base === "" || (base.startsWith("/") && !base.startsWith("//")) ? base : undefined;
}

/** Built pages by variant, most recently used last; bounded, since `?url=` and the prefix come from requests. */
const MAX_CACHED_PAGES = 64;

/**
 * Returns the handler serving the OXP Inspector at `/inspector` and the project's API reference at
 * `/docs` (Scalar), every file from the package: no CDN, works offline.
 *
 * @throws TypeError when `serverUrl` is not an http(s) URL with a plain host name.
 * @example
 * createServer({ tools, pages: [inspector()] }); // http://127.0.0.1:8080/inspector and /docs
 * createHandler({ tools, pages: [inspector()] }); // the same on plain node:http
 */
export function inspector(options: InspectorOptions = {}): InspectorHandler {
  const distDir = options.distDir ?? defaultDistDir();
  const configuredOrigin = originOf(options.serverUrl);
  if (options.serverUrl !== undefined && configuredOrigin === undefined) {
    throw new TypeError(
      `inspector(): serverUrl must be an http:// or https:// URL with a plain host name (got ${JSON.stringify(options.serverUrl)})`,
    );
  }
  let built: Built | undefined;
  const pages = new Map<string, Asset>();

  /** The page of one variant, built and (once gzipped) compressed once, not on every request. */
  const cachedPage = (key: string, render: () => string): Asset => {
    let page = pages.get(key);
    if (page) pages.delete(key);
    else {
      page = { body: Buffer.from(render()), type: TYPES[".html"] as string };
      if (pages.size >= MAX_CACHED_PAGES) pages.delete(pages.keys().next().value as string);
    }
    pages.set(key, page);
    return page;
  };

  const inspectorPage = (req: IncomingMessage, res: ServerResponse, base: string, query: URLSearchParams) => {
    const page = built as Built;
    const presetOrigin = originOf(query.get("url"));
    const connect = [...new Set([configuredOrigin, presetOrigin].filter((origin) => origin !== undefined))];
    securityHeaders(res, inspectorPolicy(connect));
    const config = { serverUrl: options.serverUrl ?? null, connectOrigins: connect };
    const html = cachedPage(JSON.stringify(["inspector", base, connect]), () =>
      page.inspectorHtml
        .replaceAll('"./assets/', `"${escapeHtml(base)}/inspector/assets/`)
        .replace(
          "</head>",
          `<script id="inspector-config" type="application/json">${scriptJson(config)}</script></head>`,
        ),
    );
    send(req, res, html, NO_CACHE);
  };

  const docsPage = (req: IncomingMessage, res: ServerResponse, base: string) => {
    const { docsManifest } = built as Built;
    securityHeaders(res, DOCS_POLICY);
    const asset = (name: string) => `${escapeHtml(base)}/docs/assets/${encodeURIComponent(name)}`;
    const config = { url: `${base}/docs/openapi.json`, base };
    const html = cachedPage(
      JSON.stringify(["docs", base]),
      () =>
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>OXP API reference</title>` +
        `<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">` +
        `<link rel="stylesheet" href="${asset(docsManifest.style)}">` +
        `<script id="docs-config" type="application/json">${scriptJson(config)}</script></head>` +
        `<body><div id="app"></div><script src="${asset(docsManifest.scalar)}"></script>` +
        `<script src="${asset(docsManifest.init)}"></script></body></html>`,
    );
    send(req, res, html, NO_CACHE);
  };

  return (req, res, next) => {
    const pass = () => {
      if (next) next();
      else sendJsonError(res, 404, "Not found");
    };
    const url = targetOf(req.url ?? "/");
    if (!url) {
      pass();
      return;
    }
    const path = url.pathname;
    const section = /^\/(inspector|docs)(\/.*)?$/.exec(path);
    if (!section) {
      pass();
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      sendJsonError(res, 405, "This method is not allowed here", { Allow: "GET, HEAD" });
      return;
    }
    built ??= load(distDir);
    if (!built) {
      sendJsonError(res, 503, "The inspector is not built: run `npm run build` in @otc/inspector");
      return;
    }
    const [, name, rest = ""] = section;
    const base = mountPrefix(req, path);
    if (base === undefined) {
      pass();
      return;
    }
    if (rest === "" || rest === "/") {
      if (name === "inspector") inspectorPage(req, res, base, url.searchParams);
      else docsPage(req, res, base);
      return;
    }
    if (name === "docs" && rest === "/openapi.json") {
      securityHeaders(res, "default-src 'none'; frame-ancestors 'none'");
      send(req, res, built.openapiJson, NO_CACHE);
      return;
    }
    // Only names read from the build folders are served: a path with `..` or `/` in it matches none.
    const file = /^\/assets\/([^/]+)$/.exec(rest)?.[1];
    const assets = name === "inspector" ? built.uiAssets : built.docsAssets;
    const fileName = file === undefined ? undefined : decodeURIComponentSafe(file);
    const asset = fileName === undefined ? undefined : assets.get(fileName);
    // The manifest is the build's bookkeeping, not an asset: refused by its decoded name (`manifest%2Ejson` too).
    if (!asset || fileName === "manifest.json") {
      pass();
      return;
    }
    securityHeaders(res, name === "inspector" ? inspectorPolicy([]) : DOCS_POLICY);
    send(req, res, asset, IMMUTABLE);
  };
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return "";
  }
}
