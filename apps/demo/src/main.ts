/** `npm start`: runs the demo Tool Server, configured from the environment. */
import { createLogger, listen } from "@otc/server";
import { createDemoApp, type DemoOptions } from "./app.js";

const env = process.env;
const number = (name: string, fallback: number): number => {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
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
if (env.OXP_PUBLIC_URL) options.publicUrl = env.OXP_PUBLIC_URL;
const apiKeys = env.OXP_API_KEY ? [env.OXP_API_KEY] : [];
const jwtSecret = env.OXP_JWT_SECRET;
if (apiKeys.length > 0 || jwtSecret) {
  options.auth = { apiKeys };
  if (jwtSecret) {
    const audiences = (env.OXP_JWT_AUDIENCES ?? "")
      .split(",")
      .map((audience) => audience.trim())
      .filter(Boolean);
    options.auth.jwt = { secret: jwtSecret, audiences };
  }
}

const { app } = createDemoApp(options);
const host = env.HOST || "127.0.0.1";
const port = number("PORT", 8080);
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
const auth = [apiKeys.length > 0 && "API key", jwtSecret && "JWT"].filter(Boolean).join(" + ") || "off";
console.log(`OXP demo Tool Server listening on ${url} (authentication: ${auth})`);
console.log(`  GET  ${url}/tools        lists the tools`);
console.log(`  POST ${url}/tools/call   calls one`);
