/** The Inspector and the API reference as a fetch page, for every adapter and runtime (Node, Bun, Deno, workerd): no Node module. */
import vary from "vary";
import { createInspectorCore, type InspectorFilesLoader } from "./internal/inspector-core.js";

/**
 * A page served beside the protocol routes: answers a request it serves, or undefined to pass it on. Structurally
 * the `FetchPage` of `@otc/server/fetch`, declared here so that the package needs no dependency on the server.
 */
type FetchPage = (request: Request) => Response | undefined | Promise<Response | undefined>;

/** Options of {@link inspectorPage}. */
export interface InspectorPageOptions {
  /**
   * The server the page connects to when its URL has no `?url=`. Default: the server the page is
   * served by (its origin, and the prefix it is mounted under). An http(s) URL whose host is a plain
   * name or IP address: its origin goes into the page's Content-Security-Policy, so anything else
   * makes {@link inspectorPage} throw.
   */
  serverUrl?: string;
  /**
   * Gives the package's built files (see {@link InspectorFiles}), or undefined while it is not built (the page then
   * answers a JSON 503 and asks again on the next request). Called at the first request, not before. On Node, Bun
   * and Deno: `readInspectorFiles`, which reads the package's `dist` folder; on a runtime without a file system,
   * the files bundled with the worker.
   */
  files: InspectorFilesLoader;
}

/**
 * Where a page's links start, relative to the path it was asked for (`/inspector` or `/inspector/`): the server's
 * root below whatever prefix it is mounted under, which the page is not told.
 */
function relativeRoot(path: string): string {
  const depth = path.split("/").length - 2;
  return depth === 0 ? "." : Array.from({ length: depth }, () => "..").join("/");
}

/**
 * Returns the fetch page serving the OXP Inspector at `/inspector` and the project's API reference at `/docs`
 * (Scalar), every file from the package: no CDN, works offline. GET and HEAD; another method on those paths is a
 * JSON 405, any other path is passed on (undefined). The pages' links are relative, so they hold below any prefix
 * the page is not told: its assets, the OpenAPI document, and the reference's "This server" (the server's root).
 *
 * @throws TypeError when `serverUrl` is not an http(s) URL with a plain host name.
 * @example
 * createFetchHandler({ tools, pages: [inspectorPage({ files: readInspectorFiles })] }); // /inspector and /docs
 */
export function inspectorPage(options: InspectorPageOptions): FetchPage {
  const answer = createInspectorCore({
    serverUrl: options.serverUrl,
    files: options.files,
    caller: "inspectorPage()",
  });
  return async (request) => {
    const answered = await answer({
      method: request.method,
      url: new URL(request.url),
      acceptEncoding: request.headers.get("accept-encoding"),
      mount: relativeRoot,
    });
    if (!answered) {
      return undefined;
    }
    const headers = new Headers(answered.headers);
    if (answered.vary) {
      headers.set("Vary", vary.append(headers.get("Vary") ?? "", answered.vary));
    }
    return new Response(request.method === "HEAD" ? null : (answered.body as Uint8Array<ArrayBuffer> | string | null), {
      status: answered.status,
      headers,
    });
  };
}
