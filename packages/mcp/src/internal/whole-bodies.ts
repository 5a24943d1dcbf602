/** The bridge's requests to the OXP server sent with their bodies whole: bytes written with the headers, not a stream. */

/**
 * `base`, except that a Request carrying a body (how @otc/client's POSTs reach its fetch) is sent as its URL and an
 * init whose body is the bytes. A Request's body is a stream (@otc/client's guard reads a copy of it, so fetch cannot
 * take the original string), which fetch writes piece by piece after the headers: a write, and a wake-up of the OXP
 * server, for each; bytes go out in one write with the headers. Its signal, redirect mode and headers go unchanged.
 */
export function wholeBodies(base: typeof fetch): typeof fetch {
  return async (input, init) => {
    if (!(input instanceof Request) || input.body === null || init !== undefined) {
      return base(input, init);
    }
    return base(input.url, {
      method: input.method,
      headers: input.headers,
      body: await input.arrayBuffer(),
      signal: input.signal,
      redirect: input.redirect,
    });
  };
}
