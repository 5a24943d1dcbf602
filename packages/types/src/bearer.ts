/** Reads the token of an `Authorization: Bearer <token>` header (RFC 6750 section 2.1), one way for every server. */

/**
 * `Bearer`, in any case (RFC 9110 section 11.1: the scheme is case-insensitive), then spaces or tabs, then the
 * token, then optional spaces or tabs. The token is any run of visible characters, not only RFC 6750's token68
 * ones: an API key sent as a bearer token may hold others, and is compared as sent.
 */
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The bearer token of an `Authorization` header value; undefined when there is none or the header is another scheme. */
export function parseBearer(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
}
