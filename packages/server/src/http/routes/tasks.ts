/**
 * The tasks extension's routes (docs/protocol.md 9.3): a call's status (`GET /tools/calls/{call_id}`, with
 * `Prefer: wait=N` a long poll), its cancel (`DELETE`), and its event stream (`GET .../events`).
 */
import { type CallStatus, OXP_VERSION } from "@otc/types";
import { ServerConfigError, WireError } from "../../core/errors.js";
import { MAX_WAIT_SECONDS, parsePrefer } from "../../core/tasks.js";
import { ANSWER_KIND } from "../answers.js";
import { callEventStream } from "../call-events.js";
import type { Answer, Exchange } from "../exchange.js";
import type { AdapterOptions } from "../options.js";
import { checkVersion, decodedSegment, type RouteContext, type RouteHandler } from "./context.js";

/** A call a task route names: the request, who sent it, and the call_id it names. */
interface CallTarget {
  exchange: Exchange;
  principal: string;
  callId: string;
}

/** The 404 of a call_id this principal does not have (unknown, another principal's, or expired). */
function noSuchCall(): WireError {
  return new WireError("not_found", "No such call", {
    developerMessage: "This call_id is unknown for your credentials, or its record has expired.",
  });
}

/** The tasks extension's routes, within the bounds of the `eventStreams` and `longPolls` options. */
export function tasksRoute(
  context: RouteContext,
  options: Pick<AdapterOptions, "eventStreams" | "longPolls">,
): RouteHandler {
  const { core, answer } = context;
  const maxStreamsPerClient = options.eventStreams?.maxPerClient ?? 16;
  const streamKeepAliveMs = options.eventStreams?.keepAliveMs ?? 15_000;
  /** Open event streams by client, for their bound (an entry only while above 0). */
  const openStreams = new Map<string, number>();
  const maxPollsPerClient = options.longPolls?.maxPerClient ?? 100;
  if (!(Number.isSafeInteger(maxPollsPerClient) && maxPollsPerClient > 0)) {
    throw new ServerConfigError("longPolls.maxPerClient must be a positive integer");
  }
  /** Long polls waiting, by client, for their bound (an entry only while above 0). */
  const openPolls = new Map<string, number>();

  /** The tasks extension's routes: a call's status (GET, with long poll), its cancel (DELETE), its events. */
  const serveTask: RouteHandler = async (exchange, route, { principal }, headers) => {
    await checkVersion(context, exchange, route.name);
    const callId = decodedSegment(route);
    const taskHeaders = { ...headers, "OXP-Extensions": "tasks" };
    if (exchange.method === "DELETE") {
      return statusAnswer(await core.cancelCall(principal, callId), taskHeaders);
    }
    const state = await core.callState(principal, callId);
    let status = state?.status;
    const target: CallTarget = { exchange, principal, callId };
    if (route.name === "events") {
      if (!status) {
        throw noSuchCall();
      }
      return eventsAnswer(target, status, taskHeaders);
    }
    const waitSeconds = parsePrefer(exchange.header("prefer")).waitSeconds ?? 0;
    if (state && status?.status === "running" && waitSeconds > 0) {
      // Held polls are bounded per client, as event streams are: one principal's thousand polls from a few addresses
      // would otherwise hold the server's connections, and each progress would wake all of them.
      const client = context.clients.of(exchange, principal);
      const polls = openPolls.get(client) ?? 0;
      if (polls >= maxPollsPerClient) {
        throw new WireError("too_many_requests", "Too many of your long polls are waiting", {
          developerMessage: `At most ${maxPollsPerClient} long polls of one client wait at once; wait for one to be answered, or follow the call's events.`,
          headers: { "Retry-After": "5" },
        });
      }
      openPolls.set(client, polls + 1);
      try {
        await changeOf(target, state, Math.min(waitSeconds, MAX_WAIT_SECONDS) * 1000);
      } finally {
        const left = (openPolls.get(client) ?? 1) - 1;
        if (left > 0) {
          openPolls.set(client, left);
        } else {
          openPolls.delete(client);
        }
      }
      // A record that expired meanwhile is gone: a 404, as for any call_id the principal does not have.
      status = await core.callStatus(principal, callId);
    }
    return statusAnswer(status, taskHeaders);
  };

  const statusAnswer = (status: CallStatus | undefined, headers: Record<string, string>): Answer => {
    if (!status) {
      throw noSuchCall();
    }
    return answer(200, JSON.stringify(status), ANSWER_KIND.status, headers);
  };

  /**
   * Waits until a running call's status or progress changes, `maxMs` pass, or the client goes away: told of every
   * change by the core's task board, whichever instance runs the call.
   */
  const changeOf = (
    { exchange, principal, callId }: CallTarget,
    { status: seen, seq }: { status: CallStatus; seq: number },
    maxMs: number,
  ) =>
    new Promise<void>((resolve) => {
      const done = () => {
        core.clock.clearTimeout(timer);
        unwatch?.();
        unwatchClient();
        resolve();
      };
      const timer = core.clock.setTimeout(done, maxMs);
      const unwatchClient = exchange.watchClient(done);
      const unwatch = core.watchCall(principal, callId, () => {
        // A change this poll has seen already (its status was read after it) wakes nothing: the poll answers news.
        const local = core.localCallState(principal, callId);
        if (local?.status.status !== "running" || local.seq !== seq) {
          done();
        }
      });
      const before = JSON.stringify(seen);
      // A change between the status read and the watch (another instance's call ending then) is seen here.
      core.callStatus(principal, callId).then(
        (now) => {
          if (JSON.stringify(now) !== before) {
            done();
          }
        },
        () => {},
      );
    });

  /** The event stream of a call, within the principal's allowance of open streams. */
  const eventsAnswer = (
    { exchange, principal, callId }: CallTarget,
    status: CallStatus,
    headers: Record<string, string>,
  ): Answer => {
    const streamHeaders = {
      ...headers,
      "OXP-Version": OXP_VERSION,
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
    };
    if (exchange.method === "HEAD") {
      return { status: 200, headers: streamHeaders };
    }
    const client = context.clients.of(exchange, principal);
    const open = openStreams.get(client) ?? 0;
    if (open >= maxStreamsPerClient) {
      throw new WireError("too_many_requests", "Too many of your event streams are open", {
        developerMessage: `At most ${maxStreamsPerClient} event streams of one client are open at once; close one, or poll the call's status.`,
        headers: { "Retry-After": "5" },
      });
    }
    openStreams.set(client, open + 1);
    const stream = callEventStream({
      core,
      principal,
      callId,
      status,
      lastEventId: exchange.header("last-event-id"),
      keepAliveMs: streamKeepAliveMs,
      onClose: () => {
        const left = (openStreams.get(client) ?? 1) - 1;
        if (left > 0) {
          openStreams.set(client, left);
        } else {
          openStreams.delete(client);
        }
      },
    });
    return { status: 200, headers: {}, response: new Response(stream, { status: 200, headers: streamHeaders }) };
  };

  return serveTask;
}
