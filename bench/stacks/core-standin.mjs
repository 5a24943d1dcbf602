/** The protocol core behind a bare node:http listener: the native adapter's stand-in until @otc/server exports createHandler. */
// Enough for the benchmark's requests (GET /tools, POST /tools/call, API key and HS256 JWT auth), not a complete
// adapter: no Host, media type, body limit or draining checks.
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer as createHttpServer } from "node:http";
import { WireError } from "@otc/server";
import { OxpCore, parseCallBody, wrapResponse } from "@otc/server/core";
import { OXP_VERSION } from "@otc/types";
import { jwtVerify } from "jose";

const digest = (value) => createHash("sha256").update(value).digest();
const unauthorized = () => new WireError("unauthorized", "Authentication required");

/** A check of `OXP-API-Key` or a bearer HS256 JWT, as @otc/server's; undefined when auth is off. */
function authenticator(auth) {
  if (!auth) return undefined;
  const keys = (auth.apiKeys ?? []).map(digest);
  const secret = auth.jwt ? new TextEncoder().encode(auth.jwt.secret) : undefined;
  return async (headers) => {
    const apiKey = headers["oxp-api-key"];
    if (typeof apiKey === "string") {
      const hashed = digest(apiKey);
      if (keys.some((key) => timingSafeEqual(key, hashed))) return "api-key";
      throw unauthorized();
    }
    const token = /^Bearer (.+)$/.exec(headers.authorization ?? "")?.[1];
    if (!token || !secret) throw unauthorized();
    try {
      const { payload } = await jwtVerify(token, secret, { algorithms: ["HS256"], requiredClaims: ["exp"] });
      return `jwt:${payload.sub ?? ""}`;
    } catch {
      throw unauthorized();
    }
  };
}

/** A request listener serving `options.tools` through OxpCore. */
export function coreListener(options) {
  const { auth, ...coreOptions } = options;
  const core = new OxpCore(coreOptions);
  const authenticate = authenticator(auth);
  const send = (res, status, body) => {
    res.writeHead(status, { "content-type": "application/json", "oxp-version": OXP_VERSION }).end(JSON.stringify(body));
  };
  return (req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", async () => {
      try {
        const principal = authenticate ? await authenticate(req.headers) : "anonymous";
        if (req.url === "/tools") {
          // The core's cached body and ETag where it has them, as createHandler will serve them.
          if (typeof core.toolList !== "function") return send(res, 200, core.listTools());
          const { body, etag } = core.toolList();
          const headers = { "content-type": "application/json", "oxp-version": OXP_VERSION, etag };
          if (req.headers["if-none-match"] === etag) return res.writeHead(304, headers).end();
          return res.writeHead(200, headers).end(body);
        }
        if (req.url === "/tools/call" && req.method === "POST") {
          const { request, envelope } = parseCallBody(JSON.parse(Buffer.concat(chunks).toString()));
          return send(res, 200, wrapResponse(await core.call(request, { principal, baseUrl: "" }), envelope));
        }
        send(res, 404, { message: "Not found" });
      } catch (error) {
        if (error instanceof WireError) send(res, error.status, error.toBody());
        else send(res, 400, { message: "Bad request" });
      }
    });
  };
}

/** Listens on 127.0.0.1, an ephemeral port; resolves to the URL. */
export function coreStandIn(options) {
  const server = createHttpServer(coreListener(options));
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}
