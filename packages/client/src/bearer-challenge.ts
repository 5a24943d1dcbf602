/** Reads the Bearer challenge of a `WWW-Authenticate` header (RFC 9110 11.6.1, RFC 6750 3): where to sign in, which scopes. */

/** A server's Bearer challenge, as a 401 or a 403 states it: why the token was refused and what would do. */
export interface BearerChallenge {
  /** `error`: `invalid_token` (expired, revoked, malformed), `insufficient_scope`, `invalid_request`; absent when no token was sent. */
  error?: string;
  /** `error_description`: for developers, never for the user. */
  errorDescription?: string;
  /** `scope`, split on spaces: every scope the request needs (not only those the token lacks); empty when not given. */
  scopes: string[];
  /**
   * `resource_metadata`: the URL of the server's protected resource metadata (RFC 9728), where a sign-in starts. As the
   * server sent it: check it (https, the server's own `resource`) before following it.
   */
  resourceMetadata?: string;
  /** `realm`, when the server names one. */
  realm?: string;
}

/**
 * The longest header read, in characters. Node's own limit on all of a response's headers is 16 KiB; a fetch given to
 * the client may have none, and a challenge that names every scope of a server stays far below this.
 */
export const MAX_CHALLENGE_CHARS = 16 * 1024;

/** One challenge: its scheme (lower case) and its auth-params (names in lower case). */
interface Challenge {
  scheme: string;
  params: Map<string, string>;
}

/** tchar (RFC 9110 5.6.2). */
const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
/** token68's characters, before its trailing `=` (RFC 9110 11.2). */
const TOKEN68_CHAR = /[-._~+/0-9A-Za-z]/;

/**
 * A scanner over one header value: each method reads from `at` and moves it past what it read, so the whole value is
 * read once, left to right, whatever it holds.
 */
class Scanner {
  at = 0;
  constructor(readonly text: string) {}

  get done(): boolean {
    return this.at >= this.text.length;
  }

  peek(): string {
    return this.text.charAt(this.at);
  }

  /** Skips spaces and tabs (OWS, BWS). */
  skipSpace(): void {
    while (this.peek() === " " || this.peek() === "\t") {
      this.at++;
    }
  }

  /** A token (1*tchar), or "" when none starts here. */
  token(): string {
    const start = this.at;
    while (!this.done && TCHAR.test(this.peek())) {
      this.at++;
    }
    return this.text.slice(start, this.at);
  }

  /** A quoted-string's content with its quoted-pairs undone; undefined when it does not end, or holds a control. */
  quoted(): string | undefined {
    this.at++; // the opening quote
    let out = "";
    while (!this.done) {
      const char = this.peek();
      this.at++;
      if (char === '"') {
        return out;
      }
      if (char === "\\") {
        if (this.done) {
          return undefined;
        }
        out += this.peek();
        this.at++;
        continue;
      }
      // qdtext: no controls but HTAB.
      if (char !== "\t" && (char < " " || char === "\x7f")) {
        return undefined;
      }
      out += char;
    }
    return undefined;
  }

  /** A token68 that ends here (at the end, or before OWS and a comma); "" otherwise, leaving `at` where it was. */
  token68(): string {
    const start = this.at;
    let end = start;
    while (end < this.text.length && TOKEN68_CHAR.test(this.text.charAt(end))) {
      end++;
    }
    if (end === start) {
      return "";
    }
    while (this.text.charAt(end) === "=") {
      end++;
    }
    let after = end;
    while (this.text.charAt(after) === " " || this.text.charAt(after) === "\t") {
      after++;
    }
    if (after < this.text.length && this.text.charAt(after) !== ",") {
      return "";
    }
    this.at = end;
    return this.text.slice(start, end);
  }
}

/**
 * Every challenge of a header value, in order; undefined when the value does not follow the grammar anywhere (a
 * client cannot tell which part of a broken header to trust).
 */
function parseChallenges(header: string): Challenge[] | undefined {
  const scan = new Scanner(header);
  const challenges: Challenge[] = [];
  // Empty list elements (`, ,`) are allowed around and between challenges.
  const skipSeparators = () => {
    for (scan.skipSpace(); scan.peek() === ","; scan.skipSpace()) {
      scan.at++;
    }
  };
  skipSeparators();
  while (!scan.done) {
    const scheme = scan.token();
    if (scheme === "") {
      return undefined;
    }
    const challenge: Challenge = { scheme: scheme.toLowerCase(), params: new Map() };
    challenges.push(challenge);
    if (scan.done || scan.peek() === ",") {
      skipSeparators();
      continue;
    }
    if (scan.peek() !== " " && scan.peek() !== "\t") {
      return undefined;
    }
    scan.skipSpace();
    if (scan.token68() !== "") {
      skipSeparators();
      continue;
    }
    // auth-params, up to the end or to the next challenge's scheme (a token not followed by `=`).
    for (;;) {
      skipSeparators();
      if (scan.done) {
        break;
      }
      const start = scan.at;
      const name = scan.token();
      if (name === "") {
        return undefined;
      }
      scan.skipSpace();
      if (scan.peek() !== "=") {
        scan.at = start;
        break;
      }
      scan.at++;
      scan.skipSpace();
      const quoted = scan.peek() === '"';
      const value = quoted ? scan.quoted() : scan.token();
      if (value === undefined || (!quoted && value === "")) {
        return undefined;
      }
      const key = name.toLowerCase();
      // A parameter given twice (RFC 6750 forbids it) would leave the client to pick one: refuse the header.
      if (challenge.params.has(key)) {
        return undefined;
      }
      challenge.params.set(key, value);
      scan.skipSpace();
      if (!scan.done && scan.peek() !== ",") {
        return undefined;
      }
    }
  }
  return challenges;
}

/**
 * The first Bearer challenge of a `WWW-Authenticate` value (the scheme matched in any case; several challenges, and
 * several header lines joined with commas, are read as one list). Undefined for no header, a header without a Bearer
 * challenge, a value that breaks the grammar, or one longer than {@link MAX_CHALLENGE_CHARS}; it never throws, and
 * reads the value once.
 *
 * @example
 * parseBearerChallenge('Bearer error="insufficient_scope", scope="oxp:tools:read oxp:tools:call"');
 * // { error: "insufficient_scope", scopes: ["oxp:tools:read", "oxp:tools:call"] }
 */
export function parseBearerChallenge(header: string | null | undefined): BearerChallenge | undefined {
  if (typeof header !== "string" || header.length > MAX_CHALLENGE_CHARS) {
    return undefined;
  }
  const bearer = parseChallenges(header)?.find((challenge) => challenge.scheme === "bearer");
  if (!bearer) {
    return undefined;
  }
  const { params } = bearer;
  const out: BearerChallenge = { scopes: (params.get("scope") ?? "").split(" ").filter((scope) => scope !== "") };
  const error = params.get("error");
  const errorDescription = params.get("error_description");
  const resourceMetadata = params.get("resource_metadata");
  const realm = params.get("realm");
  if (error !== undefined) {
    out.error = error;
  }
  if (errorDescription !== undefined) {
    out.errorDescription = errorDescription;
  }
  if (resourceMetadata !== undefined) {
    out.resourceMetadata = resourceMetadata;
  }
  if (realm !== undefined) {
    out.realm = realm;
  }
  return out;
}
