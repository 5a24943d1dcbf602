/** A fetch given to the bridge handed its POSTs as a URL and bytes, not as @otc/client's Requests with a stream. */

/**
 * `base`, except that a Request carrying a body (how @otc/client hands its POSTs to a fetch given in its options) is
 * sent as its URL and an init whose body is the bytes. Given the Request, the global fetch would build its own from
 * it, piping the body through a stream of its own; from bytes it does not. Measured with a given fetch that calls the
 * global one, the client's CPU per call with it is 0.80-1.00x of that without (bench/results/notes.md, issue 36).
 * The bridge given no fetch does not use it: the client then hands the global fetch its URL and init itself. Its
 * signal, redirect mode and headers go unchanged.
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
