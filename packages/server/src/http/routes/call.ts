/**
 * `POST /tools/call` (docs/protocol.md 3.3 step 6): media type (415), framing and declared size (413, 415), the
 * client's share (429), the body read and bounded as it comes (413, 400), parsed (400), `OXP-Version` and the
 * body's shape (400), the core's call (its own steps: docs/protocol.md 3.3 from the tool's resolution on), the
 * answer; with `Prefer: respond-async` and the tasks extension, a 202 for a call still running (9.3).
 */
import { type CallBody, checkCallBody, unwrapCallBody, wrapResponse } from "../../core/call-body.js";
import { shorten, WireError } from "../../core/errors.js";
import { isPending } from "../../core/fast-path.js";
import { JsonScanner } from "../../core/json-limits.js";
import type { OxpCore } from "../../core/oxp-core.js";
import { checkOxpVersionHeader } from "../../core/protocol-version.js";
import { parsePrefer } from "../../core/tasks.js";
import { ANSWER_KIND } from "../answers.js";
import { ExchangeCallMeta } from "../call-meta.js";
import type { Answer, Exchange } from "../exchange.js";
import { FairnessMeter } from "../fairness.js";
import type { OAuthGrant, OAuthResource } from "../oauth.js";
import { checkBodyFraming, isJsonType, parseJson } from "../request-body.js";
import { callPath } from "../routes.js";
import { asksFor, type RouteContext, type RouteHandler } from "./context.js";

/** A checked call on its way to the core: its request, whether it came in the envelope, and its meta. */
interface CheckedCall {
  request: Parameters<OxpCore["call"]>[0];
  envelope: boolean;
  meta: ExchangeCallMeta;
}

/**
 * The call route. The client's work on a call is charged to its fair share through a {@link FairnessMeter}: the
 * body's pieces as they come, then from the parse on in one stretch up to the core's first wait (or its answer);
 * what the core does after a wait it charges itself, through the meta, and the answer's writing ends the last
 * stretch.
 */
export function callRoute(context: RouteContext): RouteHandler {
  const { core, budget, limits, bodyLimit, contract, telemetry } = context;

  /** Step 6 for `Prefer: respond-async`: the call's checks answer as without it; a call still running after `waitMs` is answered 202. */
  const serveAsyncCall = async (
    exchange: Exchange,
    { request, envelope, meta }: CheckedCall,
    waitMs: number,
    headers: Record<string, string>,
  ): Promise<Answer> => {
    let result: Awaited<ReturnType<typeof core.callAsync>>;
    try {
      result = await core.callAsync(request, meta, waitMs);
    } finally {
      meta.answered();
    }
    if ("response" in result) {
      const text = JSON.stringify(wrapResponse(result.response, envelope));
      return context.answer(200, text, envelope ? ANSWER_KIND.callEnvelope : ANSWER_KIND.call, headers);
    }
    return context.answer(202, JSON.stringify(result.status), ANSWER_KIND.status, {
      ...headers,
      "OXP-Extensions": "tasks",
      "Preference-Applied": "respond-async",
      Location: callLocation(exchange, result.status.call_id),
    });
  };

  /** Where a call's status is read: from `publicUrl` when set, else the URL the request reached, else a path. */
  const callLocation = (exchange: Exchange, callId: string): string => {
    const path = callPath(callId);
    if (context.publicUrl !== undefined) {
      return `${context.publicUrl}${path}`;
    }
    try {
      return `${exchange.baseUrl()}${path}`;
    } catch {
      // A fetch host that tells neither its origin nor an address: a path, which RFC 9110 allows.
      return path;
    }
  };

  return async (exchange, _route, admission, headers) => {
    const { principal, grant } = admission;
    const contentType = exchange.header("content-type");
    if (!isJsonType(contentType)) {
      throw new WireError("unsupported_media_type", "The request body must be JSON", {
        developerMessage: "Send the body with Content-Type: application/json.",
      });
    }
    const declared = checkBodyFraming(exchange, bodyLimit, contentType);
    // Before the body is read: a client over its share of the server's time waits its turn (429).
    const client = context.clients.of(exchange, principal);
    budget?.admit(client);
    const meter = budget ? new FairnessMeter(budget, client) : undefined;
    // Shape bounds on the text as it comes: a hostile shape is refused before JSON.parse builds it.
    const scanner = new JsonScanner(limits);
    // A body that comes whole in one piece (most do) is scanned just before it is parsed, within the same stretch
    // as the checks; the pieces of a body that comes in chunks are scanned, and measured, as they come.
    let whole = false;
    let parsed: ReturnType<typeof checkCallBody>;
    try {
      const text = await exchange.readText(bodyLimit, declared, (piece, isWhole) => {
        if (isWhole) {
          whole = true;
          return;
        }
        meter?.resume();
        try {
          scanner.push(piece);
        } catch (error) {
          // What is left of the body is not read: the connection cannot carry another request.
          if (error instanceof WireError) {
            error.details.headers = { ...error.details.headers, Connection: "close" };
          }
          throw error;
        } finally {
          meter?.pause();
        }
      });
      meter?.resume();
      if (whole) {
        scanner.push(text);
      }
      const body = parseJson(text);
      if (contract) {
        const hostCheck = contract(exchange, "call", body);
        if (hostCheck) {
          await hostCheck;
        }
        parsed = unwrapCallBody(body as CallBody);
      } else {
        checkOxpVersionHeader(exchange.header("oxp-version"));
        parsed = checkCallBody(body);
      }
    } catch (error) {
      meter?.charge();
      throw error;
    }
    const { request, envelope } = parsed;
    // A gateway may have routed the call by this header: the body must name the same tool (9.9, `[cache.tool-header]`).
    const routed = exchange.header("oxp-tool");
    if (routed !== undefined && routed !== request.tool_id) {
      meter?.charge();
      throw new WireError("bad_request", "The OXP-Tool header names another tool than the body's tool_id", {
        developerMessage: `OXP-Tool is '${shorten(routed)}'; tool_id is '${shorten(request.tool_id)}'.`,
      });
    }
    if (grant) {
      bindUser(request, grant, context.oauth as OAuthResource);
    }
    if (context.vault && !context.acceptClientTokens && request.context?.authorization) {
      // The vault is the only source of its providers' tokens (docs/protocol.md 9.7, `[connections.client-tokens]`).
      const vault = context.vault;
      request.context = {
        ...request.context,
        authorization: request.context.authorization.filter((token) => !vault.providers.has(token.id)),
      };
    }
    const meta = new ExchangeCallMeta({
      exchange,
      principal,
      grant,
      oauth: context.oauth,
      client,
      tracing: context.tracing,
      publicUrl: context.publicUrl,
      budget,
      bodyValues: scanner.values,
    });
    const preferences = asksFor(context, exchange, "tasks") ? parsePrefer(exchange.header("prefer")) : undefined;
    if (preferences?.respondAsync) {
      meter?.charge();
      return serveAsyncCall(exchange, { request, envelope, meta }, (preferences.waitSeconds ?? 0) * 1000, headers);
    }
    // What the core does before its first wait (resolving, checking, and the whole run of a synchronous tool
    // without a call_id) is charged with the body's parsing and checks, in one stretch; what it does after a wait,
    // it charges through the meta. A call answered without a wait has the answer's writing in that stretch too.
    let response: Awaited<ReturnType<typeof core.call>>;
    try {
      const pending = telemetry?.traceCall
        ? telemetry.traceCall(exchange.headers(), headers, (onEnd) => {
            meta.onEnd = onEnd;
            return core.call(request, meta);
          })
        : core.callNow(request, meta);
      if (isPending(pending)) {
        // A wait is not work: the stretch ends here, and the answer's writing begins a new one.
        meter?.charge();
        response = await pending;
        meter?.resume();
      } else {
        response = pending;
      }
    } catch (error) {
      // Refused by the core at once (unknown tool, invalid input): the work up to the refusal is the client's.
      // One that ends the wait in an error was charged at the wait.
      meter?.charge();
      throw error;
    } finally {
      meta.answered();
    }
    const text = JSON.stringify(wrapResponse(response, envelope));
    const done = context.answer(200, text, envelope ? ANSWER_KIND.callEnvelope : ANSWER_KIND.call, headers);
    // Serializing a large answer is the client's cost too.
    meter?.charge();
    return done;
  };
}

/**
 * The user of a call admitted by an access token is its subject (docs/protocol.md 9.6, `[oauth.user-is-subject]`):
 * a call without `user_id` runs for `sub`; one naming another user is a 403, unless the token holds the delegation
 * scope.
 */
function bindUser(request: CheckedCall["request"], grant: OAuthGrant, oauth: OAuthResource): void {
  const sent = request.context?.user_id;
  if (sent === undefined || sent === "") {
    request.context = { ...request.context, user_id: grant.subject };
    return;
  }
  if (sent !== grant.subject && !grant.delegated) {
    throw oauth.userMismatch();
  }
}
