/** `otc login <url>` and `otc logout <url>`: an OAuth sign-in to a Tool Server (docs/protocol.md 9.6) through the browser and a loopback redirect (RFC 8252), kept in the credentials file. */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import * as oauth from "oauth4webapi";
import {
  credentialsPath,
  findSignIn,
  readCredentials,
  removeSignIn,
  saveSignIn,
  updateCredentials,
} from "./credentials.js";
import { EXIT, type Io } from "./io.js";
import {
  type Clock,
  discoverIssuer,
  discoverResource,
  oauthMessage,
  requestOptions,
  SignInError,
  SignInUnreachableError,
  signInFrom,
  systemClock,
} from "./oauth-session.js";
import { openInBrowser } from "./open-browser.js";

/** How long `otc login` waits for the whole sign-in by default, in seconds. */
export const DEFAULT_LOGIN_TIMEOUT_SECONDS = 300;
/** The scopes asked for when `--scope` is not given, where the server lists them. */
const TOOL_SCOPES = ["oxp:tools:read", "oxp:tools:call"];
/** The redirect URI registered for otc: RFC 8252 lets a loopback redirect take any port. */
const REGISTERED_REDIRECT_URI = "http://127.0.0.1/callback";

export const LOGIN_HELP = `otc login: sign in to an OXP Tool Server that accepts OAuth access tokens

Usage:
  otc login <url> [--client-id ID] [--scope "S1 S2"] [--no-browser] [--timeout-seconds N]
  otc logout <url>

  <url>                the Tool Server (default: --url or OXP_URL), as its resource metadata names it
  --client-id ID       a public client registered for otc at the authorization server, with the
                       redirect URI ${REGISTERED_REDIRECT_URI} (any port); without it, otc registers
                       itself where the authorization server allows (RFC 7591) and reuses that client
  --scope "S1 S2"      the scopes to ask for (default: oxp:tools:read and oxp:tools:call where the
                       server lists them, and offline_access where the authorization server does)
  --no-browser         print the sign-in URL without opening a browser
  --timeout-seconds N  how long the whole sign-in may take (default ${DEFAULT_LOGIN_TIMEOUT_SECONDS})

The sign-in is kept in $OTC_CONFIG_DIR, $XDG_CONFIG_HOME/otc or ~/.config/otc (credentials.json,
readable by you only). otc tools, otc call and otc calls use it for that server when no --api-key or
--jwt-secret is given, and renew it with its refresh token. otc logout revokes the refresh token at
the authorization server and forgets the sign-in.
`;

/** What tests (and embedders) may replace. */
export interface LoginRuntime {
  /** The clock of the sign-in's time limit and of token expiry; default the wall clock. */
  clock?: Clock;
  /** Opens the sign-in URL in a browser; default the platform's opener (open, xdg-open, rundll32). */
  openUrl?: (url: string) => Promise<void>;
}

class UsageError extends Error {}

const OPTIONS = {
  url: { type: "string" },
  "client-id": { type: "string" },
  scope: { type: "string" },
  "no-browser": { type: "boolean" },
  "timeout-seconds": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

/** The command line of `otc login` or `otc logout`: the server's URL, and the options. */
function parse(command: "login" | "logout", argv: readonly string[], env: Io["env"]) {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
    throw new UsageError(message.charAt(0).toLowerCase() + message.slice(1));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    return { help: true as const };
  }
  if (command === "logout") {
    const extra = (["client-id", "scope", "no-browser", "timeout-seconds"] as const).find(
      (name) => values[name] !== undefined,
    );
    if (extra) {
      throw new UsageError(`--${extra} is an option of otc login, not of otc logout`);
    }
  }
  const [raw, ...extra] = positionals;
  if (extra.length > 0) {
    throw new UsageError(
      `unexpected argument${extra.length > 1 ? "s" : ""} ${extra.map((arg) => `'${arg}'`).join(", ")}`,
    );
  }
  const url = raw ?? values.url ?? env.OXP_URL;
  if (url === undefined || url === "") {
    throw new UsageError(`${command} needs the server's URL, e.g. otc ${command} https://tools.example.com`);
  }
  let parsedUrl: URL | undefined;
  try {
    parsedUrl = new URL(url);
  } catch {
    parsedUrl = undefined;
  }
  if (parsedUrl?.protocol !== "http:" && parsedUrl?.protocol !== "https:") {
    throw new UsageError(`<url> must be an http:// or https:// URL (got '${url}')`);
  }
  if (parsedUrl.username || parsedUrl.password || parsedUrl.search || parsedUrl.hash) {
    throw new UsageError(`<url> must be the server's URL alone, without credentials, query or fragment (got '${url}')`);
  }
  let timeoutSeconds = DEFAULT_LOGIN_TIMEOUT_SECONDS;
  if (values["timeout-seconds"] !== undefined) {
    timeoutSeconds = Number(values["timeout-seconds"]);
    if (!(Number.isInteger(timeoutSeconds) && timeoutSeconds > 0)) {
      throw new UsageError("--timeout-seconds takes a whole number of seconds, e.g. --timeout-seconds 120");
    }
  }
  if (values.scope !== undefined && !/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/.test(values.scope)) {
    throw new UsageError(
      `--scope takes scopes separated by single spaces, e.g. --scope "oxp:tools:read oxp:tools:call"`,
    );
  }
  return { help: false as const, url, values: values as Values, timeoutSeconds };
}

/** Prints an error of login or logout and returns its exit code. */
function report(command: string, error: unknown, io: Io): number {
  if (error instanceof UsageError) {
    io.stderr(`otc: ${error.message}\nRun 'otc ${command} --help' for usage.\n`);
    return EXIT.usage;
  }
  if (error instanceof SignInInterrupted) {
    io.stderr(`otc ${command}: interrupted: nothing was stored\n`);
    return EXIT.interrupted;
  }
  if (error instanceof SignInTimeout || error instanceof SignInUnreachableError) {
    io.stderr(`otc ${command}: ${error.message}\n`);
    return EXIT.connection;
  }
  if (error instanceof SignInError) {
    io.stderr(`otc ${command}: ${error.message}\n`);
    return EXIT.authentication;
  }
  // fetch's own failure ("fetch failed"), with why in its cause.
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
  io.stderr(`otc ${command}: ${error instanceof Error ? error.message : String(error)}${cause}\n`);
  return EXIT.connection;
}

/** The sign-in took longer than its time limit. */
class SignInTimeout extends SignInError {
  override name = "SignInTimeout";
}

/** The sign-in was stopped (Ctrl-C, or the runner's interrupt signal). */
class SignInInterrupted extends SignInError {
  override name = "SignInInterrupted";
}

/** An AbortSignal that aborts after `ms` on `clock` (with `reason`) or with `interrupt`; `dispose` clears its timer. */
function deadline(clock: Clock, ms: number, reason: () => Error, interrupt?: AbortSignal) {
  const controller = new AbortController();
  const timer = clock.setTimeout(() => controller.abort(reason()), ms);
  const onInterrupt = () => controller.abort(new SignInInterrupted("interrupted"));
  interrupt?.addEventListener("abort", onInterrupt, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      clock.clearTimeout(timer);
      interrupt?.removeEventListener("abort", onInterrupt);
    },
  };
}

/** Rejects with the signal's reason once it aborts. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
    }
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** One request to the loopback redirect URI, held open until the sign-in has an outcome to show in the browser. */
interface Callback {
  url: URL;
  answer(text: string, status?: number): void;
}

/** A listener on 127.0.0.1 (port chosen by the system) for the one request to `/callback`; others get a 404. */
async function loopbackListener() {
  let deliver: (callback: Callback) => void = () => undefined;
  const received = new Promise<Callback>((resolve) => {
    deliver = resolve;
  });
  let taken = false;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    const send = (text: string, status: number) => {
      response.writeHead(status, {
        "Content-Type": "text/plain; charset=utf-8",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        Connection: "close",
      });
      response.end(`${text}\n`);
    };
    if (request.method !== "GET" || url.pathname !== "/callback" || taken) {
      send("Not found.", 404);
      return;
    }
    taken = true;
    deliver({ url, answer: (text, status = 200) => send(text, status) });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/** The scopes to ask for: `--scope`, else the server's tool scopes, and offline_access where the AS offers it. */
function scopesToAsk(
  requested: string | undefined,
  resource: oauth.ResourceServer,
  as: oauth.AuthorizationServer,
): string {
  if (requested !== undefined) {
    return requested;
  }
  const listed = resource.scopes_supported;
  const scopes = Array.isArray(listed) ? TOOL_SCOPES.filter((scope) => listed.includes(scope)) : [...TOOL_SCOPES];
  if (as.scopes_supported?.includes("offline_access")) {
    scopes.push("offline_access");
  }
  return scopes.join(" ");
}

/**
 * The client otc signs in as at `as`: `--client-id`, else the one otc registered there before, else one it
 * registers now (RFC 7591), kept in the credentials file for the next login.
 */
async function clientIdFor(
  as: oauth.AuthorizationServer,
  given: string | undefined,
  env: Io["env"],
  signal: AbortSignal,
): Promise<string> {
  if (given !== undefined) {
    return given;
  }
  const { clients } = await readCredentials(env);
  const kept = Object.hasOwn(clients, as.issuer) ? clients[as.issuer] : undefined;
  if (kept) {
    return kept.client_id;
  }
  if (as.registration_endpoint === undefined) {
    throw new SignInError(
      `the authorization server ${as.issuer} does not register clients itself (no registration_endpoint): give the id of a public client registered there for otc, with the redirect URI ${REGISTERED_REDIRECT_URI}: otc login <url> --client-id ID`,
    );
  }
  let registered: Awaited<ReturnType<typeof oauth.processDynamicClientRegistrationResponse>>;
  try {
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: "otc (OXP command line)",
        application_type: "native",
        redirect_uris: [REGISTERED_REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      requestOptions(as.registration_endpoint, signal),
    );
    registered = await oauth.processDynamicClientRegistrationResponse(response);
  } catch (error) {
    if (signal.aborted) {
      throw error;
    }
    throw new SignInError(`the authorization server ${as.issuer} refused to register otc: ${oauthMessage(error)}`, {
      cause: error,
    });
  }
  const clientId = registered.client_id;
  await updateCredentials(env, (file) => {
    file.clients[as.issuer] = { client_id: clientId };
  });
  return clientId;
}

/** Why the authorization response cannot be used, in the user's words. */
function authorizationFailure(error: unknown): SignInError {
  if (error instanceof oauth.AuthorizationResponseError) {
    const denied =
      error.error === "access_denied" ? "the sign-in was denied" : "the authorization server refused the sign-in";
    return new SignInError(`${denied}: ${oauthMessage(error)}`, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  if (/"state"/.test(message)) {
    return new SignInError(
      "the sign-in's answer is not for the sign-in otc started (its state does not match): nothing was stored; run otc login again",
      { cause: error },
    );
  }
  if (/"iss"/.test(message)) {
    return new SignInError(
      "the sign-in's answer names another authorization server than the one asked (its iss does not match): nothing was stored",
      { cause: error },
    );
  }
  return new SignInError(`the sign-in's answer is not usable: ${message}`, { cause: error });
}

/** Runs `otc login` (argv without the leading `login`); resolves with the exit code. */
export async function loginCommand(argv: readonly string[], io: Io, runtime: LoginRuntime = {}): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse("login", argv, io.env);
  } catch (error) {
    return report("login", error, io);
  }
  if (args.help) {
    io.stdout(LOGIN_HELP);
    return EXIT.ok;
  }
  const { url, values, timeoutSeconds } = args;
  const clock = runtime.clock ?? systemClock;
  const limit = deadline(
    clock,
    timeoutSeconds * 1000,
    () => new SignInTimeout(`the sign-in did not complete within ${timeoutSeconds} seconds: nothing was stored`),
    io.interrupt,
  );
  const { signal } = limit;
  let listener: Awaited<ReturnType<typeof loopbackListener>> | undefined;
  let callback: Callback | undefined;
  try {
    const work = (async () => {
      const resource = await discoverResource(url, signal);
      const issuer = resource.authorization_servers?.[0] as string;
      const as = await discoverIssuer(issuer, signal);
      if (as.authorization_endpoint === undefined || as.token_endpoint === undefined) {
        throw new SignInError(`the authorization server ${issuer} has no authorization or token endpoint`);
      }
      if (as.code_challenge_methods_supported && !as.code_challenge_methods_supported.includes("S256")) {
        throw new SignInError(`the authorization server ${issuer} does not offer PKCE with S256, which otc requires`);
      }
      const clientId = await clientIdFor(as, values["client-id"], io.env, signal);
      const client: oauth.Client = { client_id: clientId };
      const scope = scopesToAsk(values.scope, resource, as);
      listener = await loopbackListener();
      const { redirectUri } = listener;
      const codeVerifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const authorizationUrl = new URL(as.authorization_endpoint);
      const query: Record<string, string> = {
        response_type: "code",
        client_id: clientId,
        redirect_uri: redirectUri,
        scope,
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: "S256",
        resource: resource.resource,
      };
      for (const [name, value] of Object.entries(query)) {
        if (value !== "") {
          authorizationUrl.searchParams.set(name, value);
        }
      }
      io.stderr(`To sign in to ${resource.resource}, open this URL in a browser:\n  ${authorizationUrl.href}\n`);
      if (values["no-browser"] !== true) {
        await (runtime.openUrl ?? openInBrowser)(authorizationUrl.href).catch(() => {
          io.stderr("otc: could not open a browser: open the URL above.\n");
        });
      }
      io.stderr(`Waiting for the sign-in (up to ${timeoutSeconds} seconds)...\n`);
      callback = await listener.received;
      let parameters: URLSearchParams;
      try {
        parameters = oauth.validateAuthResponse(as, client, callback.url, state);
      } catch (error) {
        throw authorizationFailure(error);
      }
      let tokens: oauth.TokenEndpointResponse;
      try {
        const response = await oauth.authorizationCodeGrantRequest(
          as,
          client,
          oauth.None(),
          parameters,
          redirectUri,
          codeVerifier,
          { ...requestOptions(as.token_endpoint, signal), additionalParameters: { resource: resource.resource } },
        );
        tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
      } catch (error) {
        if (signal.aborted) {
          throw error;
        }
        throw new SignInError(`the authorization server did not issue tokens: ${oauthMessage(error)}`, {
          cause: error,
        });
      }
      const signIn = signInFrom(
        { resource: resource.resource, issuer: as.issuer, client_id: clientId },
        tokens,
        clock.now(),
      );
      await saveSignIn(io.env, signIn);
      return signIn;
    })();
    // The work stops at its next step once the time is up; the wait for the browser stops at once.
    const signIn = await Promise.race([work, whenAborted(signal)]);
    (callback as Callback | undefined)?.answer(
      `Signed in to ${signIn.resource}. You can close this page and return to the terminal.`,
    );
    io.stdout(
      `Signed in to ${signIn.resource} at ${signIn.issuer}${signIn.scope ? ` (scopes: ${signIn.scope})` : ""}.\n` +
        `The sign-in is kept in ${credentialsPath(io.env)}.\n`,
    );
    if (signIn.refresh_token === undefined) {
      io.stderr(
        "The authorization server issued no refresh token: run otc login again once the access token expires.\n",
      );
    }
    return EXIT.ok;
  } catch (error) {
    const failure = signal.aborted && !(error instanceof SignInError) ? signal.reason : error;
    const answer = callback as Callback | undefined;
    answer?.answer(
      `The sign-in failed: ${failure instanceof Error ? failure.message : String(failure)}\nReturn to the terminal.`,
      400,
    );
    return report("login", failure, io);
  } finally {
    limit.dispose();
    await (listener as Awaited<ReturnType<typeof loopbackListener>> | undefined)?.close();
  }
}

/** How long `otc logout` gives the authorization server to revoke the refresh token. */
const LOGOUT_TIMEOUT_MS = 30_000;

/** Runs `otc logout` (argv without the leading `logout`); resolves with the exit code. */
export async function logoutCommand(argv: readonly string[], io: Io, runtime: LoginRuntime = {}): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse("logout", argv, io.env);
  } catch (error) {
    return report("logout", error, io);
  }
  if (args.help) {
    io.stdout(LOGIN_HELP);
    return EXIT.ok;
  }
  const { url } = args;
  let signIn: Awaited<ReturnType<typeof findSignIn>>;
  try {
    signIn = await findSignIn(io.env, url);
  } catch (error) {
    return report("logout", new SignInError((error as Error).message), io);
  }
  if (signIn === undefined) {
    io.stdout(`Not signed in to ${url}: nothing to do.\n`);
    return EXIT.ok;
  }
  const limit = deadline(
    runtime.clock ?? systemClock,
    LOGOUT_TIMEOUT_MS,
    () => new SignInTimeout(`the authorization server did not answer within ${LOGOUT_TIMEOUT_MS / 1000} seconds`),
    io.interrupt,
  );
  let revoked: string;
  let code: number = EXIT.ok;
  try {
    const as = await discoverIssuer(signIn.issuer, limit.signal);
    if (as.revocation_endpoint === undefined) {
      revoked = `${signIn.issuer} offers no revocation: the tokens stay valid until they expire`;
    } else {
      const token = signIn.refresh_token ?? signIn.access_token;
      const response = await oauth.revocationRequest(as, { client_id: signIn.client_id }, oauth.None(), token, {
        ...requestOptions(as.revocation_endpoint, limit.signal),
        additionalParameters: {
          token_type_hint: signIn.refresh_token !== undefined ? "refresh_token" : "access_token",
        },
      });
      await oauth.processRevocationResponse(response);
      revoked = `${signIn.refresh_token !== undefined ? "the refresh token was" : "the access token was"} revoked at ${signIn.issuer}`;
    }
  } catch (error) {
    const failure = limit.signal.aborted ? limit.signal.reason : error;
    revoked = `the tokens could not be revoked at ${signIn.issuer} (${oauthMessage(failure)}); they stay valid until they expire`;
    code = EXIT.connection;
  } finally {
    limit.dispose();
  }
  // The sign-in is forgotten even when the revocation failed: the user asked to be signed out of this machine.
  await removeSignIn(io.env, signIn.resource);
  (code === EXIT.ok ? io.stdout : io.stderr)(`Signed out of ${signIn.resource}: ${revoked}.\n`);
  return code;
}
