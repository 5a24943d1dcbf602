/** The floor: raw node:http + precompiled Ajv, nothing else (parse the body, validate request and input, run, JSON out). */
import { createServer } from "node:http";
import { peerWork } from "./peer-work.mjs";

export async function start(config) {
  const work = peerWork(config);
  const send = (res, status, body) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", async () => {
      if (req.method === "GET" && req.url === "/tools") {
        return send(res, 200, work.list());
      }
      if (req.method !== "POST" || req.url !== "/tools/call") {
        return send(res, 404, { message: "Not found" });
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString());
      } catch {
        return send(res, 400, { message: "The request body is not valid JSON" });
      }
      const answer = await work.call(body);
      send(res, answer.status, answer.body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, note: "node:http + Ajv" };
}
