/** The bridge's GET /tools asking for the oauth extension too, so that each tool lists its `required_scopes` (docs/protocol.md 9.6). */

/**
 * `base`, with `oauth` added to the `OXP-Extensions` of every GET of `{baseUrl}/tools` when `offered()` says the
 * server's discovery document lists it. @otc/client's `listTools` asks only for `annotations`: a fetch is the one
 * place where the bridge can ask for more without a client option of its own. Any other request goes as it is.
 */
export function askingForScopes(base: typeof fetch, baseUrl: string, offered: () => Promise<boolean>): typeof fetch {
  const toolsPath = `${new URL(baseUrl).pathname.replace(/\/+$/, "")}/tools`;
  return async (input, init) => {
    // Read without building a Request: building one from a Request with a body would use that body up.
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const url = input instanceof Request ? input.url : String(input);
    if (method !== "GET" || URL.parse(url)?.pathname !== toolsPath || !(await offered())) {
      return base(input, init);
    }
    const request = new Request(input, init);
    const headers = new Headers(request.headers);
    const asked = headers.get("oxp-extensions");
    headers.set("OXP-Extensions", asked ? `${asked}, oauth` : "oauth");
    return base(new Request(request, { headers }));
  };
}
