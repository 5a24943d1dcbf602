/** The authorization server of the bench's oauth rows: RFC 8414 metadata and a JWKS on 127.0.0.1, and the access tokens it issues. */
// It runs in the bench's own process: the servers under test read its metadata and key set once (their key set is
// then cached), so it serves a few requests a run. What is measured is the resource server.
import { KeyObject, randomUUID, sign } from "node:crypto";
import { createServer } from "node:http";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

/** The scopes of the bench's tokens: what `GET /tools` and a call need (docs/protocol.md 9.6). */
export const OAUTH_SCOPE = "oxp:tools:read oxp:tools:call";
/** The servers' canonical URL, as their tokens' `aud` names it: a bare origin; never fetched, so it need not resolve. */
export const OAUTH_RESOURCE = "https://tools.bench.invalid";

const METADATA_PATH = "/.well-known/oauth-authorization-server";
const JWKS_PATH = "/jwks.json";
const KID = "bench-es256";

/**
 * Starts the authorization server on 127.0.0.1 port 0, with one ES256 key. `accessToken` mints a token with jose (as
 * an authorization server would, once per agent); `freshToken` mints a new one synchronously, for a load generator
 * that sends a different token with every request. `fetches` counts the metadata and key set reads.
 */
export async function startIssuer({ resource = OAUTH_RESOURCE, subject = "bench-agent" } = {}) {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: KID, alg: "ES256", use: "sig" }] });
  const fetches = { metadata: 0, jwks: 0 };
  let issuer = "";
  const server = createServer((request, response) => {
    const send = (body) => response.writeHead(200, { "content-type": "application/json" }).end(body);
    if (request.method === "GET" && request.url === METADATA_PATH) {
      fetches.metadata++;
      send(
        JSON.stringify({
          issuer,
          jwks_uri: `${issuer}${JWKS_PATH}`,
          response_types_supported: ["code"],
          grant_types_supported: ["authorization_code", "refresh_token"],
          code_challenge_methods_supported: ["S256"],
        }),
      );
    } else if (request.method === "GET" && request.url === JWKS_PATH) {
      fetches.jwks++;
      send(jwks);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${server.address().port}`;

  const claims = (now, lifetimeSeconds) => ({
    iss: issuer,
    aud: resource,
    sub: subject,
    client_id: "bench",
    scope: OAUTH_SCOPE,
    iat: now,
    exp: now + lifetimeSeconds,
    jti: randomUUID(),
  });
  // The JWS by hand, with node:crypto's synchronous signing: autocannon builds each request synchronously.
  const signer = KeyObject.from(privateKey);
  const encodedHeader = Buffer.from(JSON.stringify({ alg: "ES256", typ: "at+jwt", kid: KID })).toString("base64url");
  return {
    url: issuer,
    fetches,
    /** An RFC 9068 access token for `resource`, valid for `lifetimeSeconds`. */
    accessToken: (lifetimeSeconds) =>
      new SignJWT(claims(Math.floor(Date.now() / 1000), lifetimeSeconds))
        .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: KID })
        .sign(privateKey),
    /** A new access token (its own `jti`), valid for ten minutes, signed synchronously. */
    freshToken: () => {
      const payload = Buffer.from(JSON.stringify(claims(Math.floor(Date.now() / 1000), 600))).toString("base64url");
      const input = `${encodedHeader}.${payload}`;
      const signature = sign("sha256", Buffer.from(input), { key: signer, dsaEncoding: "ieee-p1363" });
      return `${input}.${signature.toString("base64url")}`;
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}
