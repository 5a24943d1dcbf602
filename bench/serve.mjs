// A server for the throughput benchmark, in its own process: `node bench/serve.mjs <mode>` prints its URL.
// Modes: express (createServer, as deployed), express-validated (responses checked too, as in tests),
// core (OxpCore behind a bare node:http adapter: what the protocol core costs without Express and the validator).
import { createServer as createHttpServer } from "node:http";
import { createDemoApp } from "@otc/demo/app";
import { demoTools } from "@otc/demo/tools";
import { listen, WireError } from "@otc/server";
import { OxpCore, parseCallBody, wrapResponse } from "@otc/server/core";
import { OXP_VERSION } from "@otc/types";

const mode = process.argv[2] ?? "express";

if (mode === "core") {
  // The smallest adapter: enough for the benchmark's requests, not a complete one.
  const core = new OxpCore({ tools: demoTools() });
  const send = (res, status, body) => {
    res.writeHead(status, { "content-type": "application/json", "oxp-version": OXP_VERSION }).end(JSON.stringify(body));
  };
  const server = createHttpServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", async () => {
      try {
        if (req.url === "/tools") return send(res, 200, core.listTools());
        if (req.url === "/tools/call" && req.method === "POST") {
          const { request, envelope } = parseCallBody(JSON.parse(Buffer.concat(chunks).toString()));
          return send(
            res,
            200,
            wrapResponse(await core.call(request, { principal: "anonymous", baseUrl: "" }), envelope),
          );
        }
        send(res, 404, { message: "Not found" });
      } catch (error) {
        if (error instanceof WireError) send(res, error.status, error.toBody());
        else send(res, 400, { message: "Bad request" });
      }
    });
  });
  server.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${server.address().port}`));
} else {
  const { app } = createDemoApp({ logger: false, validateResponses: mode === "express-validated" });
  const { url } = await listen(app, { port: 0, handleSignals: true });
  console.log(url);
}
