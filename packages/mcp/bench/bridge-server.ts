/** The bridge as its own process for the bench: `stdio`, or `http` (prints its URL on stderr). OXP_URL and OXP_API_KEY from the environment. */
import { createMcpBridge, serveHttp, serveStdio } from "../src/index.js";

const bridge = createMcpBridge({ url: process.env.OXP_URL ?? "", apiKey: process.env.OXP_API_KEY });
if (process.argv[2] === "http") {
  const served = await serveHttp(bridge);
  process.stderr.write(`${served.url}\n`);
} else {
  const served = await serveStdio(bridge);
  await served.closed;
  process.exit(0);
}
