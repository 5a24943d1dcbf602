/** Express 5 + express-openapi-validator alone on the project's OpenAPI document, then the tool's input check and the tool. */
import { openapiDocument } from "@otc/types";
import express from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { peerWork } from "./peer-work.mjs";

export async function start(config) {
  // The validator checks the body against the spec: the peer skips its own request check.
  const work = peerWork(config, { checkRequest: false });
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(express.json());
  app.use(
    OpenApiValidator.middleware({
      // A copy, as packages/server/src/http/create-server.ts feeds it: the validator rewrites the document it
      // is given, and its schemas' `$id`s must not be registered twice.
      apiSpec: structuredClone(openapiDocument),
      validateRequests: { allowUnknownQueryParameters: true },
      validateResponses: false,
      validateSecurity: false,
      ignoreUndocumented: true,
      validateApiSpec: false,
    }),
  );
  app.get("/tools", (_req, res) => {
    res.json(work.list());
  });
  app.post("/tools/call", async (req, res) => {
    const answer = await work.call(req.body);
    res.status(answer.status).json(answer.body);
  });
  app.use((error, _req, res, _next) => {
    res.status(error.status ?? 500).json({ message: error.message });
  });
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  return { url: `http://127.0.0.1:${server.address().port}`, note: "express 5 + express-openapi-validator + Ajv" };
}
