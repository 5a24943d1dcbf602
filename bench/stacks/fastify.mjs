/** Fastify 5 with its own schemas: the call body checked by Fastify's Ajv, the tool input by precompiled Ajv. */
import Fastify from "fastify";
import { callRequestSchema } from "./catalog.mjs";
import { peerWork } from "./peer-work.mjs";

export async function start(config) {
  const work = peerWork(config, { checkRequest: false });
  const app = Fastify({ logger: false });
  app.get("/tools", async () => work.list());
  app.post("/tools/call", { schema: { body: callRequestSchema } }, async (req, reply) => {
    const answer = await work.call(req.body);
    reply.code(answer.status);
    return answer.body;
  });
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  return { url, note: "fastify 5, body schema" };
}
