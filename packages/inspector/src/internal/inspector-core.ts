/**
 * What the Inspector answers, whichever form serves it (the node handler or the fetch page): routes, pages, assets,
 * headers, gzip, errors. Runtime-neutral: no Node module, no `Buffer`.
 */
import { openapiDocument } from "@otc/types";
import escapeHtml from "escape-html";
import Negotiator from "negotiator";

/**
 * The Inspector's built files by their path below the package's `dist` folder: `ui/index.html`, `ui/assets/<name>`
 * (the page's scripts and styles) and `docs/<name>` (the reference's, with `docs/manifest.json`). Other paths are
 * ignored.
 */
export type InspectorFiles = Readonly<Record<string, Uint8Array | string>>;

/** Gives the built files, or undefined when the package is not built; asked again until it gives them. */
export type InspectorFilesLoader = () => InspectorFiles | undefined | Promise<InspectorFiles | undefined>;

/** A request as the Inspector reads it, whichever form it came in. */
export interface InspectorRequest {
  method: string;
  /** The path below the prefix the Inspector is mounted under, and the query. */
  url: URL;
  acceptEncoding: string | null | undefined;
  /**
   * For a path the Inspector serves: the server's root, where the pages' links start and the reference's "This
   * server": the prefix it is mounted under ("" for none), or a relative path up to it. Undefined to serve nothing.
   */
  mount(path: string): string | undefined;
}

/** An answer of the Inspector; each form writes it (a HEAD without its body). */
export interface InspectorAnswer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  /** A field to add to the answer's `Vary`, after what the server set there. */
  vary?: string;
}

/** Options of {@link createInspectorCore}. */
export interface InspectorCoreOptions {
  serverUrl?: string | undefined;
  files: InspectorFilesLoader;
  /** The function the user called, for the message of a bad option. */
  caller: string;
}

/** One file kept in memory, with its gzipped form made on first use. */
interface Asset {
  body: Uint8Array;
  type: string;
  gzipped?: Promise<Uint8Array>;
}

const TYPES: Readonly<Record<string, string>> = {
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

/** The media type of a file name the Inspector serves, or undefined: an unknown type, or a source map (never served). */
export function servedType(name: string): string | undefined {
  const extension = /\.[^./]*$/.exec(name)?.[0];
  return extension === undefined || extension === ".map" || !Object.hasOwn(TYPES, extension)
    ? undefined
    : TYPES[extension];
}

/** Hashed file names never change content: a year, immutable. Pages and the document are revalidated every time. */
const IMMUTABLE = "public, max-age=31536000, immutable";
const NO_CACHE = "no-cache";

/**
 * The Inspector's policy. `'unsafe-eval'`: the form's validator (Ajv, inside @rjsf/validator-ajv8)
 * compiles each tool's input schema to a function at run time; there is no other way to validate a
 * schema the page only learns when it lists tools. `connect-src` names the servers the page may call:
 * its own origin, the `?url=` it was opened with and the configured one, and the authorization server
 * of `?auth=` (where its Sign in reads metadata and exchanges the code), nothing else.
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

/** The OpenAPI document's policy: nothing to load, nothing to frame it. */
const DOCUMENT_POLICY = "default-src 'none'; frame-ancestors 'none'";

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
  if (!raw) {
    return undefined;
  }
  try {
    const { origin } = new URL(raw);
    return SAFE_ORIGIN.test(origin) ? origin : undefined;
  } catch {
    return undefined;
  }
}

interface Built {
  inspectorHtml: string;
  uiAssets: Map<string, Asset>;
  docsAssets: Map<string, Asset>;
  docsManifest: { scalar: string; init: string; style: string };
  openapiJson: Asset;
}

const bytesOf = (content: Uint8Array | string) =>
  typeof content === "string" ? new TextEncoder().encode(content) : content;
const textOf = (content: Uint8Array | string) =>
  typeof content === "string" ? content : new TextDecoder().decode(content);

/** The build as the Inspector serves it; undefined when the page or the reference's manifest is missing. */
function toBuilt(files: InspectorFiles | undefined): Built | undefined {
  const index = files?.["ui/index.html"];
  const manifest = files?.["docs/manifest.json"];
  if (!files || index === undefined || manifest === undefined) {
    return undefined;
  }
  const uiAssets = new Map<string, Asset>();
  const docsAssets = new Map<string, Asset>();
  for (const [path, content] of Object.entries(files)) {
    const [, folder, name = ""] = /^(ui\/assets|docs)\/([^/]+)$/.exec(path) ?? [];
    const type = servedType(name);
    if (folder && type) {
      (folder === "docs" ? docsAssets : uiAssets).set(name, { body: bytesOf(content), type });
    }
  }
  return {
    inspectorHtml: textOf(index),
    uiAssets,
    docsAssets,
    docsManifest: JSON.parse(textOf(manifest)),
    openapiJson: { body: bytesOf(JSON.stringify(openapiDocument)), type: TYPES[".json"] as string },
  };
}

/** Gzips bytes with the web-standard `CompressionStream`, which Node, Bun, Deno and workerd all have. */
async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const compressed = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(compressed).arrayBuffer());
}

/**
 * True when the request's Accept-Encoding prefers gzip to sending the file as is (negotiator weighs the q-values:
 * an explicit `gzip;q=0` refuses it even when `*` is accepted). `x-gzip` is read as `gzip`, its alias (RFC 9110
 * section 8.4.1.3), which negotiator does not know.
 */
function acceptsGzip(accept: string | null | undefined): boolean {
  const headers = { "accept-encoding": accept?.replace(/\bx-gzip\b/gi, "gzip") };
  return new Negotiator({ headers }).encoding(["gzip", "identity"]) === "gzip";
}

function securityHeaders(policy: string): Record<string, string> {
  return {
    "Content-Security-Policy": policy,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin-allow-popups",
  };
}

/** A JSON error answer: `{ message }`, never cached. */
export function jsonError(status: number, message: string, headers: Record<string, string> = {}): InspectorAnswer {
  const body = new TextEncoder().encode(JSON.stringify({ message }));
  return {
    status,
    headers: {
      ...headers,
      "Content-Type": "application/json; charset=utf-8",
      "Content-Length": String(body.byteLength),
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": "no-store",
    },
    body,
  };
}

/** A file's answer: gzipped when the request prefers it and the file is worth it, `Accept-Encoding` added to `Vary`. */
async function send(
  asset: Asset,
  cache: string,
  policy: string,
  accept: string | null | undefined,
): Promise<InspectorAnswer> {
  const headers: Record<string, string> = {
    ...securityHeaders(policy),
    "Content-Type": asset.type,
    "Cache-Control": cache,
  };
  let body = asset.body;
  // Small files are not worth a gzip header; Scalar's bundle shrinks from 4 MB to about 1 MB.
  if (asset.body.byteLength > 1024 && acceptsGzip(accept)) {
    // The promise is kept, so that requests arriving while it runs share one compression; a failure is not.
    asset.gzipped ??= gzip(asset.body).catch((error: unknown) => {
      asset.gzipped = undefined;
      throw error;
    });
    body = await asset.gzipped;
    headers["Content-Encoding"] = "gzip";
  }
  headers["Content-Length"] = String(body.byteLength);
  return { status: 200, headers, body, vary: "Accept-Encoding" };
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return "";
  }
}

/** Built pages by variant, most recently used last; bounded, since `?url=` and the prefix come from requests. */
const MAX_CACHED_PAGES = 64;

/**
 * The Inspector's answers: the page at `/inspector`, the reference at `/docs`, their assets, the OpenAPI document,
 * a JSON 405 for another method, a JSON 503 while the package is not built; undefined for what it does not serve.
 *
 * @throws TypeError when `serverUrl` is not an http(s) URL with a plain host name.
 */
export function createInspectorCore(options: InspectorCoreOptions) {
  const configuredOrigin = originOf(options.serverUrl);
  if (options.serverUrl !== undefined && configuredOrigin === undefined) {
    throw new TypeError(
      `${options.caller}: serverUrl must be an http:// or https:// URL with a plain host name (got ${JSON.stringify(options.serverUrl)})`,
    );
  }
  let loading: Promise<Built | undefined> | undefined;
  /** The build, read once; read again on the next request while it is missing or its reading failed. */
  const load = () => {
    loading ??= Promise.resolve()
      .then(options.files)
      .then(toBuilt)
      .then(
        (built) => {
          if (!built) {
            loading = undefined;
          }
          return built;
        },
        (error: unknown) => {
          loading = undefined;
          throw error;
        },
      );
    return loading;
  };
  const pages = new Map<string, Asset>();

  /** The page of one variant, built and (once gzipped) compressed once, not on every request. */
  const cachedPage = (key: string, render: () => string): Asset => {
    let page = pages.get(key);
    if (page) {
      pages.delete(key);
    } else {
      page = { body: new TextEncoder().encode(render()), type: TYPES[".html"] as string };
      if (pages.size >= MAX_CACHED_PAGES) {
        pages.delete(pages.keys().next().value as string);
      }
    }
    pages.set(key, page);
    return page;
  };

  const inspectorPage = (built: Built, request: InspectorRequest, links: string) => {
    const presetOrigin = originOf(request.url.searchParams.get("url"));
    // The page's Sign in reloads it with `?auth=` once it has learned the server's authorization server.
    const authOrigin = originOf(request.url.searchParams.get("auth"));
    const connect = [...new Set([configuredOrigin, presetOrigin, authOrigin].filter((origin) => origin !== undefined))];
    const config = { serverUrl: options.serverUrl ?? null, connectOrigins: connect };
    const html = cachedPage(JSON.stringify(["inspector", links, connect]), () =>
      built.inspectorHtml
        .replaceAll('"./assets/', `"${escapeHtml(links)}/inspector/assets/`)
        .replace(
          "</head>",
          `<script id="inspector-config" type="application/json">${scriptJson(config)}</script></head>`,
        ),
    );
    return send(html, NO_CACHE, inspectorPolicy(connect), request.acceptEncoding);
  };

  const docsPage = ({ docsManifest }: Built, request: InspectorRequest, links: string) => {
    const asset = (name: string) => `${escapeHtml(links)}/docs/assets/${encodeURIComponent(name)}`;
    // `base`: the server the reference's requests go to, resolved against the page's URL by its script.
    const config = { url: `${links}/docs/openapi.json`, base: links };
    const html = cachedPage(
      JSON.stringify(["docs", links]),
      () =>
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>OXP API reference</title>` +
        `<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">` +
        `<link rel="stylesheet" href="${asset(docsManifest.style)}">` +
        `<script id="docs-config" type="application/json">${scriptJson(config)}</script></head>` +
        `<body><div id="app"></div><script src="${asset(docsManifest.scalar)}"></script>` +
        `<script src="${asset(docsManifest.init)}"></script></body></html>`,
    );
    return send(html, NO_CACHE, DOCS_POLICY, request.acceptEncoding);
  };

  /** The answer to one request, or undefined to pass it on. */
  return async (request: InspectorRequest): Promise<InspectorAnswer | undefined> => {
    const path = request.url.pathname;
    const section = /^\/(inspector|docs)(\/.*)?$/.exec(path);
    if (!section) {
      return undefined;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return jsonError(405, "This method is not allowed here", { Allow: "GET, HEAD" });
    }
    const built = await load();
    if (!built) {
      return jsonError(503, "The inspector is not built: run `npm run build` in @otc/inspector");
    }
    const [, name, rest = ""] = section;
    const links = request.mount(path);
    if (links === undefined) {
      return undefined;
    }
    if (rest === "" || rest === "/") {
      return name === "inspector" ? inspectorPage(built, request, links) : docsPage(built, request, links);
    }
    if (name === "docs" && rest === "/openapi.json") {
      return send(built.openapiJson, NO_CACHE, DOCUMENT_POLICY, request.acceptEncoding);
    }
    // Only names read from the build folders are served: a path with `..` or `/` in it matches none.
    const file = /^\/assets\/([^/]+)$/.exec(rest)?.[1];
    const assets = name === "inspector" ? built.uiAssets : built.docsAssets;
    const fileName = file === undefined ? undefined : decodeURIComponentSafe(file);
    const asset = fileName === undefined ? undefined : assets.get(fileName);
    // The manifest is the build's bookkeeping, not an asset: refused by its decoded name (`manifest%2Ejson` too).
    if (!asset || fileName === "manifest.json") {
      return undefined;
    }
    return send(asset, IMMUTABLE, name === "inspector" ? inspectorPolicy([]) : DOCS_POLICY, request.acceptEncoding);
  };
}
