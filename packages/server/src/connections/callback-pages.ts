/** The connect flow's callback as the browser sees it (docs/protocol.md 9.7): its plain pages, and the origin it came to. */
import type { ConnectionStoreFullError } from "../core/connection-store.js";

/** The page of a link whose flow is decided already. */
export const usedAlready = () => page(400, "This link was used already", "Start again from your app.");

/**
 * The page of a completed flow that would pass a bound (`[connections.bounded]`): the user's, a 400 they can act on;
 * the store's in all, a 503, the server's to fix.
 */
export const noRoom = (bound: ConnectionStoreFullError["bound"]) =>
  bound === "user"
    ? page(400, "No room for another connection", "Remove a connection in your app, then start again.")
    : page(503, "No room for another connection", "This server holds as many connections as it can. Try again later.");

/**
 * The origin a callback came to (`[connections.callback-origin]`), compared with its flow's redirect URI's: the host
 * and port the browser named (its `Host`, which a proxy in front passes on), under the scheme the server takes for
 * itself as its links do: its `publicUrl`'s when set (a proxy that ends TLS leaves the server no other way to know
 * it), else that of the URL the request reached. Undefined for a `Host` that is no bare `name[:port]`.
 */
export function arrivalOrigin(request: Request, publicUrl: string | undefined): string | undefined {
  const url = new URL(request.url);
  // A fetch host may keep Host in the URL only: the URL's is then the one sent.
  const host = request.headers.get("host") ?? url.host;
  if (!/^[A-Za-z0-9._~-]+(?::\d*)?$|^\[[0-9A-Fa-f:.]+\](?::\d*)?$/.test(host)) {
    return undefined;
  }
  const scheme = publicUrl !== undefined && URL.canParse(publicUrl) ? new URL(publicUrl).protocol : url.protocol;
  return URL.canParse(`${scheme}//${host}`) ? new URL(`${scheme}//${host}`).origin : undefined;
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

/** A plain page for the person at the browser, never framed. */
export function page(status: number, title: string, text: string): Response {
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`;
  return new Response(body, {
    status,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Frame-Options": "DENY",
      "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
      "Referrer-Policy": "no-referrer",
    },
  });
}
