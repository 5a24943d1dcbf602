/** The path and the query of a request target or URL, read as written (nothing decoded, nothing normalised). */

/** The query of a request target or URL, without its `?` and any fragment; empty when there is none. */
export function queryOf(url: string): string {
  const start = url.indexOf("?");
  if (start === -1) {
    return "";
  }
  const fragment = url.indexOf("#", start);
  return fragment === -1 ? url.slice(start + 1) : url.slice(start + 1, fragment);
}

/** The path of an absolute URL, query and fragment dropped, as written (not re-encoded). */
export function pathOf(url: string): string {
  const scheme = url.indexOf("://");
  const start = url.indexOf("/", scheme === -1 ? 0 : scheme + 3);
  if (start === -1) {
    return "/";
  }
  // The query, else the fragment, ends the path: a `?` after a `#` is the fragment's.
  const query = url.indexOf("?", start);
  const fragment = url.indexOf("#", start);
  const end = fragment !== -1 && (query === -1 || fragment < query) ? fragment : query;
  return end === -1 ? url.slice(start) : url.slice(start, end);
}
