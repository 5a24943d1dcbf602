// The demo process's public-key JWT settings from the environment (OXP_JWT_JWKS_URL, OXP_JWT_ISSUER, OXP_JWT_PUBLIC_KEY_FILE).
import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, afterEach, beforeAll, describe, expect } from "vitest";
import { startDemoProcess, stopDemoProcesses } from "./demo-process.js";
import { send } from "./harness.js";

const ISSUER = "https://idp.example";
afterEach(stopDemoProcesses);

/** A compact JWT signed with node:crypto: ES256 (P-256, raw r||s) or EdDSA (Ed25519). */
function jwt(alg: "ES256" | "EdDSA", key: KeyObject, claims: Record<string, unknown>, kid?: string): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const input = `${encode({ alg, typ: "JWT", ...(kid ? { kid } : {}) })}.${encode(claims)}`;
  const signature =
    alg === "ES256"
      ? sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" })
      : sign(null, Buffer.from(input), key);
  return `${input}.${signature.toString("base64url")}`;
}

const claims = (extra: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  sub: "agent-1",
  exp: Math.floor(Date.now() / 1000) + 300,
  ...extra,
});

let ec: { publicKey: KeyObject; privateKey: KeyObject };
let ed: { publicKey: KeyObject; privateKey: KeyObject };
let keySet: Server;
let jwksUrl: string;
let dir: string;
let pemFile: string;

beforeAll(async () => {
  ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
  ed = generateKeyPairSync("ed25519");
  const jwk = { ...ec.publicKey.export({ format: "jwk" }), kid: "ec-1", alg: "ES256", use: "sig" };
  keySet = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => keySet.listen(0, "127.0.0.1", resolve));
  jwksUrl = `http://127.0.0.1:${(keySet.address() as AddressInfo).port}/jwks.json`;
  dir = mkdtempSync(path.join(os.tmpdir(), "oxp-demo-jwt-"));
  pemFile = path.join(dir, "ed25519.pem");
  writeFileSync(pemFile, ed.publicKey.export({ type: "spki", format: "pem" }));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await new Promise((resolve) => keySet.close(resolve));
});

describe("the demo process with public-key JWTs", () => {
  verifies(
    ["auth.jwt-public-keys", "auth.jwt-subject"],
    "takes a key set, its issuer and a PEM key file from the environment",
    async () => {
      const { url, output } = await startDemoProcess({
        OXP_JWT_JWKS_URL: jwksUrl,
        OXP_JWT_ISSUER: ISSUER,
        OXP_JWT_PUBLIC_KEY_FILE: pemFile,
      });
      expect(url, output).toBeDefined();
      expect(output).toContain("authentication: JWT");
      const tools = (token: string) => send(`${url}/tools`, { headers: { Authorization: `Bearer ${token}` } });
      expect((await tools(jwt("ES256", ec.privateKey, claims(), "ec-1"))).status).toBe(200);
      expect((await tools(jwt("EdDSA", ed.privateKey, claims()))).status).toBe(200);
      expect((await tools(jwt("ES256", ec.privateKey, claims({ sub: undefined }), "ec-1"))).status).toBe(401);
      expect((await tools(jwt("EdDSA", ed.privateKey, claims({ iss: "https://elsewhere.example" })))).status).toBe(401);
      expect((await send(`${url}/tools`)).status).toBe(401);
    },
  );

  verifies(
    "auth.jwt-public-keys",
    "refuses to start with a key set but no issuer, or a key file it cannot read",
    async () => {
      const noIssuer = await startDemoProcess({ OXP_JWT_JWKS_URL: jwksUrl });
      expect(noIssuer.code).not.toBe(0);
      expect(noIssuer.output).toContain("jwt.jwksUrl needs jwt.issuer");
      const noFile = await startDemoProcess({ OXP_JWT_PUBLIC_KEY_FILE: path.join(dir, "missing.pem") });
      expect(noFile.code).toBe(2);
      expect(noFile.output).toContain("Cannot read OXP_JWT_PUBLIC_KEY_FILE");
    },
  );
});
