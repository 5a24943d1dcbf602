/** Bare Express 5 + express.json + precompiled Ajv: what Express itself costs over the floor. */
import express from "express";
import { peerWork } from "./peer-work.mjs";

export async function start(config) {
  const work = peerWork(config);
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.get("/tools", (_req, res) => {
    res.json(work.list());
  });
  app.post("/tools/call", express.json(), async (req, res) => {
    const answer = await work.call(req.body);
    res.status(answer.status).json(answer.body);
  });
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  return { url: `http://127.0.0.1:${server.address().port}`, note: "express 5 + express.json + Ajv" };
}
