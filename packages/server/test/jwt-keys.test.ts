// Public-key JWTs (docs/protocol.md section 5): RS256, ES256 and EdDSA from PEM keys and from a key set served on loopback.
import { createPublicKey, generateKeyPairSync, randomUUID, X509Certificate } from "node:crypto";
import { createServer as createHttpServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { verifies } from "@otc/test-helpers/verifies";
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect } from "vitest";
import type { AuthenticationOptions } from "../src/index.js";
import { ServerConfigError } from "../src/index.js";
import { callTool, expectError, makeServer, type Running, send, startServer } from "./harness.js";
import { testTools } from "./tools.js";

const ISSUER = "https://issuer-a.example";
const OTHER_ISSUER = "https://issuer-b.example";
const SECRET = "a-shared-secret-of-at-least-32-bytes!";

type Alg = "RS256" | "ES256" | "EdDSA";

/** A key pair of one algorithm, with the public half as a JWK (with its kid) and as PEM. */
interface SigningKey {
  alg: Alg;
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
  pem: string;
}

async function makeKey(alg: Alg, kid = `${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return {
    alg,
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" },
    pem: await exportSPKI(publicKey),
  };
}

const now = () => Math.floor(Date.now() / 1000);

/** Claims that pass every check; each call makes a new token (its own `jti`), so none is a remembered one. */
const validClaims = (extra: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  sub: "agent-1",
  exp: now() + 300,
  jti: randomUUID(),
  ...extra,
});

function sign(
  key: SigningKey,
  claims: Record<string, unknown> = validClaims(),
  header: Record<string, unknown> = { kid: key.kid },
): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, ...header }).sign(key.privateKey);
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const tools = (running: Running, token: string) => send(`${running.baseUrl}/tools`, { headers: bearer(token) });

function expectUnauthorized(reply: Awaited<ReturnType<typeof send>>) {
  expectError(reply, 401);
  expect(reply.headers.get("www-authenticate")).toBe("Bearer");
  expect(reply.body.message).toBe("Authentication required");
}

type Mode = "serve" | "status-500" | "not-json" | "redirect" | "oversized" | "hang";

/** A JSON Web Key Set on 127.0.0.1 that counts its fetches, and can be made to misbehave. */
class KeySetServer {
  keys: JWK[] = [];
  hits = 0;
  mode: Mode = "serve";
  private readonly server: Server = createHttpServer((_req, res) => this.answer(res));
  url = "";

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/jwks.json`;
    return this;
  }

  private answer(res: ServerResponse) {
    this.hits++;
    const json = (body: unknown, status = 200) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    switch (this.mode) {
      case "serve":
        return json({ keys: this.keys });
      case "status-500":
        return json({ error: "down" }, 500);
      case "not-json":
        return res.writeHead(200, { "content-type": "text/html" }).end("<html>maintenance</html>");
      case "redirect":
        return res.writeHead(302, { location: this.url }).end();
      case "oversized":
        // The right keys, padded past the bound: only the size bound refuses them.
        return json({ keys: this.keys, padding: "x".repeat(200 * 1024) });
      case "hang":
        return; // never answers
    }
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let rsa: SigningKey;
let rsaTwin: SigningKey; // a second RS256 key in the set
let ec: SigningKey;
let ed: SigningKey;
let outsider: SigningKey; // an RS256 key the server does not know
let keySet: KeySetServer;

beforeAll(async () => {
  [rsa, rsaTwin, ec, ed, outsider] = await Promise.all([
    makeKey("RS256"),
    makeKey("RS256"),
    makeKey("ES256"),
    makeKey("EdDSA"),
    makeKey("RS256"),
  ]);
  keySet = await new KeySetServer().start();
  keySet.keys = [rsa.jwk, rsaTwin.jwk, ec.jwk, ed.jwk];
});
afterAll(() => keySet.close());

describe("a JSON Web Key Set", () => {
  let jwksServer: Running;
  beforeAll(async () => {
    jwksServer = await startServer({ auth: { jwt: { jwksUrl: keySet.url, issuer: ISSUER, audiences: ["oxp-test"] } } });
  });
  afterAll(() => jwksServer.close());
  /** Claims that pass every check of `jwksServer`, whose audience is required. */
  const forSet = (extra: Record<string, unknown> = {}) => validClaims({ aud: "oxp-test", ...extra });

  verifies(
    "auth.jwt-public-keys",
    "admits RS256, ES256 and EdDSA tokens, fetching the set once for many new tokens",
    async () => {
      const before = keySet.hits;
      for (let round = 0; round < 5; round++) {
        for (const key of [rsa, ec, ed]) {
          const reply = await tools(jwksServer, await sign(key, forSet()));
          expect(reply.status, `${key.alg}: ${reply.text}`).toBe(200);
        }
      }
      expect(keySet.hits - before).toBe(1);
    },
  );

  verifies("auth.jwt-public-keys", "tries every key of the token's alg when it names no kid", async () => {
    expect((await tools(jwksServer, await sign(rsaTwin, forSet(), {}))).status).toBe(200);
    expect((await tools(jwksServer, await sign(rsa, forSet(), {}))).status).toBe(200);
  });

  verifies.each<[string, () => Promise<string>]>([
    ["with a wrong iss", () => sign(rsa, forSet({ iss: OTHER_ISSUER }))],
    ["without iss", () => sign(rsa, forSet({ iss: undefined }))],
    ["with a non-string iss", () => sign(rsa, forSet({ iss: 42 }))],
    ["with a kid the set does not have", () => sign(rsa, forSet(), { kid: "no-such-kid" })],
    ["signed by a key outside the set, under a known kid", () => sign(outsider, forSet(), { kid: rsa.kid })],
    ["signed by a key outside the set, without kid", () => sign(outsider, forSet(), {})],
    ["whose alg does not match its kid's key", () => sign(rsa, forSet(), { kid: ec.kid })],
    ["with alg none", async () => unsigned({ alg: "none", kid: rsa.kid }, forSet())],
    [
      "signed HS256 with the RSA public key as the secret (alg confusion)",
      () => hs256(rsa.pem, forSet(), { kid: rsa.kid }),
    ],
    ["signed HS256 with a secret, on a server that has none", () => hs256(SECRET, forSet())],
    ["expired", () => sign(ec, forSet({ exp: now() - 120 }))],
    ["without exp", () => sign(ec, forSet({ exp: undefined }))],
    ["with exp more than 15 minutes ahead", () => sign(ec, forSet({ exp: now() + 20 * 60 }))],
    ["with a wrong aud", () => sign(ed, forSet({ aud: "someone-else" }))],
    ["without sub", () => sign(ed, forSet({ sub: undefined }))],
    ["with an empty sub", () => sign(ed, forSet({ sub: "" }))],
    ["with a numeric sub", () => sign(ed, forSet({ sub: 5 }))],
    ["with a sub over 256 characters", () => sign(ed, forSet({ sub: "s".repeat(257) }))],
    ["with a right-to-left override in sub", () => sign(ed, forSet({ sub: "admin\u202e1-tnega" }))],
    ["with a right-to-left isolate in sub", () => sign(rsa, forSet({ sub: "agent\u2067-1" }))],
    ["without aud, which this server requires", () => sign(ec, forSet({ aud: undefined }))],
  ])(
    ["auth.jwt-public-keys", "auth.jwt-hs256-only", "auth.jwt-claims", "auth.jwt-subject"],
    "refuses a token %s with a 401, fetching nothing during the cooldown",
    async (_case, make) => {
      // The same server admits a valid token (fetching the set, if no earlier test did).
      expect((await tools(jwksServer, await sign(rsa, forSet()))).status).toBe(200);
      const before = keySet.hits;
      expectUnauthorized(await tools(jwksServer, await make()));
      expect(keySet.hits).toBe(before);
    },
  );
});

/** A token with any header and an empty signature, as jose will not make one. */
function unsigned(header: Record<string, unknown>, claims: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${encode(header)}.${encode(claims)}.`;
}

function hs256(secret: string, claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
  return new SignJWT(claims).setProtectedHeader({ alg: "HS256", ...header }).sign(new TextEncoder().encode(secret));
}

describe("key rotation", () => {
  verifies(
    "auth.jwt-public-keys",
    "fetches the set again for a new kid; a dropped key's new tokens are refused, its remembered ones last until exp",
    async () => {
      const [oldKey, newKey] = await Promise.all([makeKey("ES256"), makeKey("ES256")]);
      const rotating = await new KeySetServer().start();
      rotating.keys = [oldKey.jwk];
      // No cooldown, so the test need not wait 30 s for the refetch a new kid causes.
      const server = await startServer({
        auth: { jwt: { jwksUrl: rotating.url, issuer: ISSUER, jwksCooldownSeconds: 0 } },
      });
      try {
        const remembered = await sign(oldKey);
        expect((await tools(server, remembered)).status).toBe(200);
        expect(rotating.hits).toBe(1);

        rotating.keys = [newKey.jwk];
        expect((await tools(server, await sign(newKey))).status).toBe(200);
        expect(rotating.hits).toBe(2);
        for (let i = 0; i < 5; i++) {
          expect((await tools(server, await sign(newKey))).status).toBe(200);
        }
        expect(rotating.hits).toBe(2);

        expectUnauthorized(await tools(server, await sign(oldKey)));
        // Verified before the rotation, remembered until its exp (at most 15 minutes): the documented choice.
        expect((await tools(server, remembered)).status).toBe(200);
      } finally {
        await Promise.all([server.close(), rotating.close()]);
      }
    },
  );
});

describe("a key set the server cannot read", () => {
  let broken: KeySetServer | undefined;
  let server: Running | undefined;
  afterEach(async () => {
    await Promise.all([server?.close(), broken?.close()]);
    broken = undefined;
    server = undefined;
  });

  verifies.each<[string, Mode | "closed"]>([
    ["answers 500", "status-500"],
    ["answers something other than JSON", "not-json"],
    ["redirects", "redirect"],
    ["is larger than 128 KiB", "oversized"],
    ["does not answer within jwksTimeoutMs", "hang"],
    ["is not listening", "closed"],
  ])(
    ["auth.jwt-public-keys", "limits.bounded-resources"],
    "answers 503 with Retry-After when the set %s, and waits before fetching again",
    async (_case, mode) => {
      broken = await new KeySetServer().start();
      broken.keys = [rsa.jwk];
      const url = broken.url;
      if (mode === "closed") {
        await broken.close();
      } else {
        broken.mode = mode;
      }
      server = await startServer({ auth: { jwt: { jwksUrl: url, issuer: ISSUER, jwksTimeoutMs: 500 } } });
      const token = await sign(rsa);
      const started = Date.now();
      const reply = await tools(server, token);
      expectError(reply, 503);
      expect(reply.headers.get("retry-after")).toBe("5");
      expect(Date.now() - started).toBeLessThan(3_000);
      const hits = broken.hits;
      expect(hits).toBeLessThanOrEqual(1);
      // Within the pause, new tokens get the same answer and no fetch goes out.
      for (let i = 0; i < 3; i++) {
        expectError(await tools(server, await sign(rsa)), 503);
      }
      expect(broken.hits).toBe(hits);
      const warnings = server.logs().filter((line) => line.msg === "the JWT key set could not be fetched");
      expect(warnings).toHaveLength(1);
      expect(server.rawLogs()).not.toContain(token.split(".")[2]);
    },
  );

  verifies("auth.jwt-public-keys", "still admits HS256 tokens while the key set is down", async () => {
    broken = await new KeySetServer().start();
    broken.mode = "status-500";
    server = await startServer({ auth: { jwt: { secret: SECRET, jwksUrl: broken.url, issuer: ISSUER } } });
    expectError(await tools(server, await sign(rsa)), 503);
    expect((await tools(server, await hs256(SECRET, { sub: "agent-1", exp: now() + 300 }))).status).toBe(200);
  });
});

describe("PEM public keys", () => {
  let pemServer: Running;
  beforeAll(async () => {
    pemServer = await startServer({
      auth: { jwt: { secret: SECRET, publicKeys: [rsa.pem, ec.pem, ed.pem], issuer: [ISSUER, OTHER_ISSUER] } },
    });
  });
  afterAll(() => pemServer.close());

  verifies(
    "auth.jwt-public-keys",
    "admits RS256, ES256 and EdDSA tokens signed by the configured keys, whatever their kid",
    async () => {
      for (const key of [rsa, ec, ed]) {
        expect((await tools(pemServer, await sign(key))).status, key.alg).toBe(200);
        expect((await tools(pemServer, await sign(key, validClaims(), {}))).status, key.alg).toBe(200);
      }
    },
  );

  verifies.each<[string, () => Promise<string>]>([
    ["signed HS256 with the RSA public key PEM as the secret", () => hs256(rsa.pem, validClaims())],
    ["signed HS256 with the EC public key PEM as the secret", () => hs256(ec.pem, validClaims())],
    ["signed by an RS256 key that is not configured", () => sign(outsider)],
    ["from an issuer not configured", () => sign(rsa, validClaims({ iss: "https://elsewhere.example" }))],
    ["without iss", () => sign(rsa, validClaims({ iss: undefined }))],
    ["with alg none", async () => unsigned({ alg: "none" }, validClaims())],
  ])(["auth.jwt-public-keys", "auth.jwt-hs256-only"], "refuses a token %s with a 401", async (_case, make) => {
    expect((await tools(pemServer, await sign(rsa))).status).toBe(200);
    expectUnauthorized(await tools(pemServer, await make()));
  });

  verifies(
    ["auth.jwt-subject", "auth.principal-identity"],
    "refuses an iss with control or bidirectional characters where no issuer is configured: it names the principal",
    async () => {
      const anyIssuer = await startServer({ auth: { jwt: { publicKeys: [rsa.pem] } } });
      try {
        expect((await tools(anyIssuer, await sign(rsa, validClaims({ iss: "https://idp.example" })))).status).toBe(200);
        for (const iss of ["https://idp\u202e.example", "https://idp.example\u2066", "https://idp\u0007.example"]) {
          const reply = await tools(anyIssuer, await sign(rsa, validClaims({ iss })));
          expectUnauthorized(reply);
          expect(reply.body.developer_message, JSON.stringify(iss)).toMatch(/\biss\b/);
        }
      } finally {
        await anyIssuer.close();
      }
    },
  );

  verifies(
    ["auth.principal-identity", "idempotency.per-principal"],
    "keeps two issuers' equal sub apart, and apart from the HS256 sub of the same name",
    async () => {
      const call = { tool_id: "Counter.Increment", input: { by: 1 }, call_id: "same-sub-two-issuers" };
      const before = pemServer.counter.value;
      const senders = [
        () => sign(rsa, validClaims({ iss: ISSUER, sub: "alice" })),
        () => sign(ec, validClaims({ iss: OTHER_ISSUER, sub: "alice" })),
        () => hs256(SECRET, { sub: "alice", exp: now() + 300 }),
      ];
      for (const make of senders) {
        const reply = await callTool(pemServer.baseUrl, call, bearer(await make()));
        expect(reply.body, reply.text).toMatchObject({ success: true });
      }
      expect(pemServer.counter.value).toBe(before + 3);
      // The same (iss, sub) with another key and a new token is the same principal: its call is replayed.
      const again = await callTool(pemServer.baseUrl, call, bearer(await sign(ed, validClaims({ sub: "alice" }))));
      expect(again.body).toMatchObject({ success: true, value: { value: before + 1 } });
      expect(pemServer.counter.value).toBe(before + 3);
    },
  );
});

/** A DER element of `tag` around `parts`. */
function der(tag: number, ...parts: Uint8Array[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

/** An X.509 certificate holding `spkiPem`'s key, signed with nothing: the server only reads the key out of it. */
function certificatePem(spkiPem: string): string {
  const spki = Buffer.from(spkiPem.replace(/-----[^-]+-----|\s/g, ""), "base64");
  const ecdsaWithSha256 = der(0x30, der(0x06, Buffer.from([0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02])));
  const name = der(
    0x30,
    der(0x31, der(0x30, der(0x06, Buffer.from([0x55, 0x04, 0x03])), der(0x0c, Buffer.from("oxp")))),
  );
  const validity = der(0x30, der(0x17, Buffer.from("250101000000Z")), der(0x17, Buffer.from("350101000000Z")));
  const version = der(0xa0, der(0x02, Buffer.from([2])));
  const tbs = der(0x30, version, der(0x02, Buffer.from([1])), ecdsaWithSha256, name, validity, name, spki);
  const certificate = der(0x30, tbs, ecdsaWithSha256, der(0x03, Buffer.from([0, 0])));
  return `-----BEGIN CERTIFICATE-----\n${certificate.toString("base64")}\n-----END CERTIFICATE-----\n`;
}

describe("public keys in the other PEM forms node:crypto read", () => {
  verifies(
    "auth.jwt-public-keys",
    "admits tokens verified with a PKCS#1 RSA key and with an X.509 certificate's key",
    async () => {
      const pkcs1 = createPublicKey(rsaTwin.pem).export({ type: "pkcs1", format: "pem" }) as string;
      const certificate = certificatePem(ec.pem);
      // A certificate node:crypto reads, holding the same key.
      expect(new X509Certificate(certificate).publicKey.export({ type: "spki", format: "pem" })).toBe(`${ec.pem}\n`);
      const server = await startServer({ auth: { jwt: { publicKeys: [pkcs1, certificate], issuer: ISSUER } } });
      try {
        expect((await tools(server, await sign(rsaTwin))).status).toBe(200);
        expect((await tools(server, await sign(ec))).status).toBe(200);
        expectUnauthorized(await tools(server, await sign(rsa)));
      } finally {
        await server.close();
      }
    },
  );
});

describe("JWT settings refused at start", () => {
  const privatePem = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({
    type: "pkcs8",
    format: "pem",
  }) as string;
  const smallRsaPem = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({
    type: "spki",
    format: "pem",
  }) as string;
  const p384Pem = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({
    type: "spki",
    format: "pem",
  }) as string;
  const build = (jwt: AuthenticationOptions["jwt"]) => () => makeServer({ tools: testTools(), auth: { jwt } });

  verifies.each<[string, () => AuthenticationOptions["jwt"]]>([
    ["no secret, publicKeys or jwksUrl", () => ({})],
    ["an empty list of public keys only", () => ({ publicKeys: [] })],
    [
      "a PEM that is not a key",
      () => ({ publicKeys: ["-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----"] }),
    ],
    ["a private key", () => ({ publicKeys: [privatePem] })],
    ["an RSA key under 2048 bits", () => ({ publicKeys: [smallRsaPem] })],
    ["an EC key on P-384", () => ({ publicKeys: [p384Pem] })],
    ["a PEM with bytes after its key", () => ({ publicKeys: [rsa.pem.replace("-----END", "AAAA\n-----END")] })],
    ["a certificate of a P-384 key", () => ({ publicKeys: [certificatePem(p384Pem)] })],
    [
      "a PEM that is no key at all",
      () => ({ publicKeys: ["-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----"] }),
    ],
    ["a jwksUrl that is not a URL", () => ({ jwksUrl: "jwks.json", issuer: ISSUER })],
    ["a jwksUrl over plain http to another host", () => ({ jwksUrl: "http://idp.example/jwks.json", issuer: ISSUER })],
    ["a jwksUrl of another scheme", () => ({ jwksUrl: "file:///etc/jwks.json", issuer: ISSUER })],
    ["a jwksUrl with credentials", () => ({ jwksUrl: "https://user:pw@idp.example/jwks.json", issuer: ISSUER })],
    ["a jwksUrl without issuer", () => ({ jwksUrl: "https://idp.example/jwks.json" })],
    ["an issuer with HS256 only", () => ({ secret: SECRET, issuer: ISSUER })],
    ["an empty issuer list", () => ({ publicKeys: [rsa.pem], issuer: [] })],
    ["alg none", () => ({ secret: SECRET, algorithms: ["none" as "HS256"] })],
    ["HS256 without a secret", () => ({ publicKeys: [rsa.pem], algorithms: ["HS256", "RS256"] })],
    ["a secret with HS256 left out", () => ({ secret: SECRET, publicKeys: [rsa.pem], algorithms: ["RS256"] })],
    ["a key whose alg is left out", () => ({ publicKeys: [rsa.pem, ec.pem], algorithms: ["RS256"] })],
    ["RS256 with no public key", () => ({ secret: SECRET, algorithms: ["HS256", "RS256"] })],
    ["an empty principalClaim", () => ({ secret: SECRET, principalClaim: "" })],
    ["a requireAudience that is no boolean", () => ({ secret: SECRET, requireAudience: "no" as unknown as boolean })],
    ["a negative jwksCooldownSeconds", () => ({ jwksUrl: keySet.url, issuer: ISSUER, jwksCooldownSeconds: -1 })],
  ])("auth.jwt-public-keys", "refuses %s with a ServerConfigError", (_case, jwt) => {
    expect(build(jwt())).toThrow(ServerConfigError);
  });

  verifies("auth.jwt-public-keys", "accepts https key sets, and http ones on loopback", () => {
    for (const jwksUrl of [
      "https://idp.example/.well-known/jwks.json",
      "http://localhost:1/jwks",
      "http://[::1]:1/jwks",
    ]) {
      expect(build({ jwksUrl, issuer: ISSUER })).not.toThrow();
    }
  });
});
