/** `npm start`: runs the demo Tool Server, configured from the environment. */
// biome-ignore-all lint/suspicious/noConsole: the demo is a program: its start-up messages and refusals go to the terminal
import { readFileSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { createLogger, listen } from "@otc/server/node";
import type { DemoOptions } from "./demo.js";

const env = process.env;
const number = (name: string, fallback: number): number => {
  const raw = env[name];
  if (raw === undefined || raw === "") {
    return fallback;
  }
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`${name} must be a non-negative number, got '${raw}'`);
    process.exit(2);
  }
  return value;
};

const options: DemoOptions = {
  logger: createLogger(),
  defaultTimeoutMs: number("OXP_TOOL_TIMEOUT_MS", 30_000),
  secrets: env.TWILIO_API_KEY ? { TWILIO_API_KEY: env.TWILIO_API_KEY } : {},
};
// Challenge links name this base URL; without it, the address a request came in on.
if (env.OXP_PUBLIC_URL) {
  options.publicUrl = env.OXP_PUBLIC_URL;
}
// Host names served besides IP addresses, localhost and OXP_PUBLIC_URL's (DNS-rebinding protection), or "any".
const allowedHosts = env.OXP_ALLOWED_HOSTS?.trim();
if (allowedHosts === "any") {
  options.allowedHosts = "any";
} else if (allowedHosts) {
  const names = allowedHosts.split(",").map((name) => name.trim());
  const bad = names.find((name) => !/^\.?[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/i.test(name));
  if (bad !== undefined) {
    console.error(
      `OXP_ALLOWED_HOSTS takes comma-separated host names without scheme or port (.example.com for a domain), or 'any'; got '${bad.slice(0, 64)}'`,
    );
    process.exit(2);
  }
  options.allowedHosts = names;
}
const apiKeys = env.OXP_API_KEY ? [env.OXP_API_KEY] : [];
const jwtSecret = env.OXP_JWT_SECRET;
// JWTs signed with a public key: an identity provider's key set, or a PEM key file.
const jwksUrl = env.OXP_JWT_JWKS_URL;
const publicKeyFile = env.OXP_JWT_PUBLIC_KEY_FILE;
const jwtOn = Boolean(jwtSecret || jwksUrl || publicKeyFile);
if (apiKeys.length > 0 || jwtOn) {
  options.auth = { apiKeys };
  if (jwtOn) {
    const list = (name: string) =>
      (env[name] ?? "")
        .split(",")
        .map((item) => item.trim())
        .filter(Boolean);
    const issuers = list("OXP_JWT_ISSUER");
    let publicKey: string | undefined;
    if (publicKeyFile) {
      try {
        publicKey = readFileSync(publicKeyFile, "utf8");
      } catch (error) {
        console.error(`Cannot read OXP_JWT_PUBLIC_KEY_FILE '${publicKeyFile}': ${(error as Error).message}`);
        process.exit(2);
      }
    }
    options.auth.jwt = {
      audiences: list("OXP_JWT_AUDIENCES"),
      ...(jwtSecret ? { secret: jwtSecret } : {}),
      ...(jwksUrl ? { jwksUrl } : {}),
      ...(publicKey ? { publicKeys: [publicKey] } : {}),
      ...(issuers.length > 0 ? { issuer: issuers } : {}),
    };
  }
}

// Example Accounts: an OAuth sign-in (otc login), a connected account and the tool using it, all in this process.
const accountsOn = ["1", "on", "true"].includes((env.OXP_EXAMPLE_ACCOUNTS ?? "").toLowerCase());
const host = env.HOST || "127.0.0.1";
let port = number("PORT", 8080);
let accountsUser: { id: string; password: string } | undefined;
if (accountsOn) {
  // Its issuer and the resource its tokens name are this server's public URL, known before it listens.
  if (port === 0 && !env.OXP_PUBLIC_URL) {
    port = await freePort(host);
  }
  const local = /^(0\.0\.0\.0|::)$/.test(host) ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  const publicUrl = (env.OXP_PUBLIC_URL || `http://${local}:${port}`).replace(/\/+$/, "");
  // The demo fetches Example Accounts' metadata and tokens at this URL itself: https, or http on this machine.
  const parsed = URL.parse(publicUrl);
  const loopback = /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost)$/.test(parsed?.hostname ?? "");
  if (!parsed || !(parsed.protocol === "https:" || (parsed.protocol === "http:" && loopback))) {
    console.error(
      `OXP_EXAMPLE_ACCOUNTS needs a public URL on https, or on http at a loopback address; got '${publicUrl.slice(0, 100)}' (set OXP_PUBLIC_URL)`,
    );
    process.exit(2);
  }
  const vaultKey = env.OXP_VAULT_KEY;
  if (vaultKey !== undefined && !/^[A-Za-z0-9_-]{43}$/.test(vaultKey)) {
    console.error("OXP_VAULT_KEY must be 32 random bytes, base64url (e.g. openssl rand 32 | basenc --base64url)");
    process.exit(2);
  }
  const { createExampleAccounts } = await import("./accounts.js");
  const accounts = await createExampleAccounts({
    publicUrl,
    ...(env.OXP_EXAMPLE_PASSWORD ? { password: env.OXP_EXAMPLE_PASSWORD } : {}),
  });
  options.publicUrl = publicUrl;
  options.accounts = accounts;
  if (vaultKey) {
    options.vaultKeys = [{ id: "env", key: vaultKey }];
  }
  accountsUser = accounts.user;
}

/** A port free on `host` now, for a server whose URL must be known before it listens. */
async function freePort(on: string): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", reject);
    probe.listen(0, on, resolve);
  });
  const { port: free } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return free;
}

// Shared state for several instances behind one address; without it, each process keeps its own in memory.
let state = "memory";
if (env.OXP_REDIS_URL) {
  const { createRedisState } = await import("@otc/redis");
  const redis = createRedisState(env.OXP_REDIS_URL, {
    ...(env.OXP_REDIS_PREFIX ? { keyPrefix: env.OXP_REDIS_PREFIX } : {}),
    onError: (error: Error) => {
      if (!options.logger) {
        return;
      }
      // An evicting maxmemory-policy could drop a claim, and a call could then run twice.
      if (error.name === "RedisEvictionPolicyWarning") {
        options.logger.warn({ err: error.message }, "Redis configuration");
      } else {
        options.logger.warn({ err: error.message }, "Redis connection error");
      }
    },
  });
  const where = redactUrl(env.OXP_REDIS_URL);
  try {
    await redis.ready(10_000);
  } catch {
    console.error(`Cannot reach Redis at ${where}: start it, or unset OXP_REDIS_URL to keep state in memory`);
    process.exit(1);
  }
  options.idempotencyStore = redis.idempotencyStore;
  options.tokenStore = redis.tokenStore;
  options.challengeStore = redis.challengeStore;
  state = `redis at ${where}`;
  if (!env.OXP_PUBLIC_URL) {
    console.warn(
      "OXP_PUBLIC_URL is not set: challenge links will name this instance, not the address in front of them",
    );
  }
}

/** A URL as it may be printed: its password hidden. */
function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) {
      url.password = "***";
    }
    return url.toString();
  } catch {
    return "(an unparsable URL)";
  }
}

// Each adapter's module is loaded only when chosen: node:http starts without loading Express's contract validator.
const adapter = env.OXP_ADAPTER || "express";
if (adapter !== "express" && adapter !== "node") {
  console.error(`OXP_ADAPTER must be 'express' or 'node', got '${adapter}'`);
  process.exit(2);
}
const { app } =
  adapter === "node"
    ? (await import("./handler.js")).createDemoHandler(options)
    : (await import("./app.js")).createDemoApp(options);
const { url } = await listen(app, { host, port, handleSignals: true }).catch((error: NodeJS.ErrnoException) => {
  // The usual first-run mistakes get one line that says what to do, not a stack.
  if (error.code === "EADDRINUSE") {
    console.error(
      `Port ${port} on ${host} is already in use: stop what runs there, or pick another, e.g. PORT=8081 npm start`,
    );
  } else if (error.code === "EACCES" || error.code === "EADDRNOTAVAIL") {
    console.error(`Cannot listen on ${host}:${port} (${error.code}): choose another HOST or PORT`);
  } else {
    throw error;
  }
  process.exit(1);
});
const auth =
  [accountsUser && "OAuth", apiKeys.length > 0 && "API key", jwtOn && "JWT"].filter(Boolean).join(" + ") || "off";
// One write: whoever reads the output finds every line once it finds the first.
const lines = [
  `OXP demo Tool Server listening on ${url} (authentication: ${auth}; adapter: ${adapter}; state: ${state})`,
  `  GET  ${url}/tools        lists the tools`,
  `  POST ${url}/tools/call   calls one`,
  `  Inspector: ${url}/inspector   API reference: ${url}/docs`,
];
if (accountsUser) {
  const base = options.publicUrl as string;
  lines.push(
    `Example Accounts: ${base}/accounts   sign in as ${accountsUser.id}, password ${accountsUser.password}`,
    `  Sign in to the demo in your browser first (connections are bound to it): ${base}/demo/signin`,
    `  npx otc login ${base}`,
    "  npx otc connections add example",
    "  npx otc call Example.Profile",
    "  npx otc call Gmail.GetEmails   (its google is an Example Accounts connection too)",
  );
} else {
  lines.push("  OAuth sign-in and connected accounts: OXP_EXAMPLE_ACCOUNTS=1 npm start");
}
console.log(lines.join("\n"));
