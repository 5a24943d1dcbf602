// The asynchronous soak (`soak.mjs --async`): workers each start an asynchronous call of Bench.Sleep on instance i, follow it
// from instance i+1 (long polls with `Prefer: wait`, or the event stream), cancel some through instance i+2, and check
// every call's end as another instance reads it; every sample prints calls/s, errors, each instance's RSS and Redis's memory.
import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { Redis } from "ioredis";
import { mib, pad, redisMemory, rssMiB, startInstance, startRedis } from "./processes.mjs";

const TASKS = { "OXP-Extensions": "tasks" };
/** The longest `Prefer: wait` a status request sends, in seconds. */
const POLL_WAIT_SECONDS = 5;
/** A request with no answer by then (beyond the wait it asked for) is given up, as a socket error. */
const REQUEST_TIMEOUT_MS = 15_000;
/** How many calls the end of the soak reads again, and how many of those at once. */
const RECHECK_MAX = 1_000;
const RECHECK_CONCURRENCY = 16;
/**
 * The kinds of error counted, in the order the table shows them: a 5xx answer; a wrong or missing answer (a wrong
 * value or status, a record gone, a 4xx); a follower told of a call's end more than `slowMs` after it; a call still
 * running `lateMs` past its sleep; a socket error or a timeout.
 */
const ERROR_KINDS = ["5xx", "wrong", "slow", "late", "other"];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `share` quantile of sorted numbers (0 for none). */
const quantile = (sorted, share) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? 0;

/** The events of an event stream's text so far, and the unfinished rest. */
function parseEvents(text) {
  const blocks = text.split("\n\n");
  const rest = blocks.pop() ?? "";
  const events = blocks.map((block) =>
    Object.fromEntries(
      block
        .split("\n")
        .filter((line) => line !== "" && !line.startsWith(":"))
        .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
    ),
  );
  return { events, rest };
}

/**
 * Runs the asynchronous soak, prints its table and summary, and answers how many errors and unconfirmed calls it saw.
 *
 * @example
 * const { errors, unconfirmed } = await asyncSoak({ seconds: 60, instances: 3, workers: 64, callMs: 1_000,
 *   cancelShare: 0.25, streamShare: 0.25, retentionMs: 10_000, sampleSeconds: 5, slowMs: 1_000, lateMs: 10_000 });
 */
export async function asyncSoak(options) {
  const { seconds, instances, workers, callMs, cancelShare, streamShare, retentionMs, sampleSeconds } = options;
  const { slowMs, lateMs } = options;
  const redis = await startRedis();
  const servers = await Promise.all(Array.from({ length: instances }, () => startInstance(redis.url, retentionMs)));
  const admin = new Redis(redis.url);
  const newCounts = () => ({ started: 0, completed: 0, cancelled: 0, cancelLate: 0, progress: 0, maxLag: 0 });
  const totals = newCounts();
  let window = newCounts();
  const errors = Object.fromEntries(ERROR_KINDS.map((kind) => [kind, 0]));
  /** The first few errors of each kind, to say what went wrong. */
  const examples = [];
  /** How long after each call's end (upper bounds, ms) its follower was told of it. */
  const lags = [];
  /** Each call whose end was confirmed, with when: the end of the soak reads the recent ones again. */
  const ended = [];

  const name = (server) => `inst${servers.indexOf(server) + 1}`;
  const fail = (kind, call, detail) => {
    errors[kind]++;
    if (examples.filter((example) => example.startsWith(`${kind}:`)).length < 3) {
      const about = call
        ? `call ${call.id} (${call.ms} ms on inst${call.runner + 1}, +${Date.now() - call.sentAt} ms) `
        : "";
      examples.push(`${kind}: ${about}${detail}`);
    }
  };

  /** One request; answers {status, body}, or undefined after counting a 5xx or a socket error. */
  const request = async (call, server, path, init = {}) => {
    const what = `${init.method ?? "GET"} ${path} on ${name(server)}`;
    try {
      const response = await fetch(`${server.url}${path}`, {
        ...init,
        headers: { ...TASKS, ...init.headers },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS + POLL_WAIT_SECONDS * 1_000),
      });
      const text = await response.text();
      if (response.status >= 500) {
        fail("5xx", call, `${what}: ${response.status} ${text.slice(0, 200)}`);
        return undefined;
      }
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    } catch (error) {
      fail("other", call, `${what}: ${error.message}`);
      return undefined;
    }
  };

  const statusPath = (call) => `/tools/calls/${encodeURIComponent(call.id)}`;

  /** A CallStatus read through `server` (a long poll with `wait`), or undefined after counting what went wrong. */
  const readStatus = async (call, server, wait) => {
    const answer = await request(call, server, statusPath(call), wait ? { headers: { Prefer: `wait=${wait}` } } : {});
    if (answer && answer.status !== 200) {
      fail("wrong", call, `status on ${name(server)}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return undefined;
    }
    return answer?.body;
  };

  /** A progress seen by a follower: of this call's sleep, never going back. */
  const checkProgress = (call, progress) => {
    totals.progress++;
    window.progress++;
    if (progress.total !== call.ms || !(progress.progress >= (call.progress?.progress ?? 0))) {
      fail("wrong", call, `progress ${JSON.stringify(progress)} after ${JSON.stringify(call.progress)}`);
    }
    call.progress = progress;
  };

  /** Follows a call by long polls through `server` until it ends or its time is up; answers its last CallStatus. */
  const poll = async (call, server) => {
    let last = { status: "running" };
    while (Date.now() < call.deadline) {
      const wait = Math.max(1, Math.min(POLL_WAIT_SECONDS, Math.ceil((call.deadline - Date.now()) / 1_000)));
      const status = await readStatus(call, server, wait);
      if (!status) {
        return undefined;
      }
      last = status;
      if (status.progress && !isDeepStrictEqual(status.progress, call.progress)) {
        checkProgress(call, status.progress);
      }
      if (status.status !== "running") {
        break;
      }
    }
    return last;
  };

  /** Follows a call by its event stream from `server` until its `result` event or its time is up; answers its CallStatus. */
  const stream = async (call, server) => {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), Math.max(0, call.deadline - Date.now()));
    let result;
    try {
      const response = await fetch(`${server.url}${statusPath(call)}/events`, { headers: TASKS, signal: stop.signal });
      if (response.status !== 200) {
        const kind = response.status >= 500 ? "5xx" : "wrong";
        fail(kind, call, `event stream on ${name(server)}: ${response.status} ${await response.text()}`);
        return undefined;
      }
      const decoder = new TextDecoder();
      let text = "";
      let lastId = 0;
      for await (const chunk of response.body) {
        const parsed = parseEvents(text + decoder.decode(chunk, { stream: true }));
        text = parsed.rest;
        for (const event of parsed.events) {
          if (event.event === "progress") {
            if (!(Number(event.id) > lastId)) {
              fail("wrong", call, `progress event ${event.id} after ${lastId}`);
            }
            lastId = Number(event.id);
            checkProgress(call, JSON.parse(event.data));
          } else if (event.event === "result") {
            result = JSON.parse(event.data);
          }
        }
      }
    } catch (error) {
      if (!stop.signal.aborted) {
        fail("other", call, `event stream on ${name(server)}: ${error.message}`);
        return undefined;
      }
    } finally {
      clearTimeout(timer);
    }
    if (!result) {
      return { status: "running" };
    }
    // The result event carries the response; whether the call completed or was cancelled, its status says.
    const status = await readStatus(call, server);
    if (status && !isDeepStrictEqual(status.result, result)) {
      fail(
        "wrong",
        call,
        `status after the result event: ${JSON.stringify(status)}, the event: ${JSON.stringify(result)}`,
      );
      return undefined;
    }
    return status;
  };

  /** Cancels a call through `server` a while after it started (any time in its first 60%); answers the DELETE's CallStatus. */
  const cancel = async (call, server) => {
    await sleep(Math.random() * 0.6 * call.ms);
    const answer = await request(call, server, statusPath(call), { method: "DELETE" });
    if (answer && answer.status !== 200) {
      fail("wrong", call, `DELETE on ${name(server)}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return undefined;
    }
    return answer?.body;
  };

  /** Whether a call's end is the right one: its own value from the instance it was started on, or cancelled when it was. */
  const check = (call, status, cancelAnswer) => {
    const result = status.result;
    if (status.status === "completed") {
      const value = { slept_ms: call.ms, tag: call.tag, pid: servers[call.runner].pid };
      if (result?.call_id !== call.id || result.success !== true || !isDeepStrictEqual(result.value, value)) {
        fail("wrong", call, `completed with ${JSON.stringify(result)}`);
        return;
      }
      if (cancelAnswer && cancelAnswer.status !== "completed") {
        fail("wrong", call, `completed, but its DELETE answered ${JSON.stringify(cancelAnswer)}`);
        return;
      }
      if (cancelAnswer) {
        totals.cancelLate++;
      }
      totals.completed++;
      window.completed++;
    } else if (status.status === "cancelled") {
      if (!call.cancel) {
        fail("wrong", call, `cancelled, never asked to: ${JSON.stringify(status)}`);
        return;
      }
      if (result?.call_id !== call.id || result.success !== false || result.error?.can_retry !== false) {
        fail("wrong", call, `cancelled with ${JSON.stringify(result)}`);
        return;
      }
      if (cancelAnswer?.status !== "cancelled") {
        fail("wrong", call, `cancelled, but its DELETE answered ${JSON.stringify(cancelAnswer)}`);
        return;
      }
      totals.cancelled++;
      window.cancelled++;
    } else {
      fail("wrong", call, `ended as ${JSON.stringify(status)}`);
      return;
    }
    ended.push({ call, status: status.status, at: Date.now() });
  };

  /** One asynchronous call started on `servers[runner]`, followed from the next instance, perhaps cancelled through the one after. */
  const oneCall = async (runner, tag) => {
    const ms = Math.round(callMs * (0.5 + Math.random()));
    const sentAt = Date.now();
    const call = {
      id: randomUUID(),
      tag,
      ms,
      runner,
      cancel: Math.random() < cancelShare,
      stream: Math.random() < streamShare,
      sentAt,
      deadline: sentAt + ms + lateMs,
      progress: undefined,
    };
    totals.started++;
    window.started++;
    const accepted = await request(call, servers[runner], "/tools/call", {
      method: "POST",
      headers: { "content-type": "application/json", Prefer: "respond-async" },
      body: JSON.stringify({ tool_id: "Bench.Sleep", input: { ms, tag }, call_id: call.id }),
    });
    if (!accepted) {
      return;
    }
    if (accepted.status !== 202 || accepted.body?.status !== "running" || accepted.body.call_id !== call.id) {
      fail("wrong", call, `POST: ${accepted.status} ${JSON.stringify(accepted.body)}`);
      return;
    }
    const follower = servers[(runner + 1) % instances];
    const third = servers[(runner + 2) % instances];
    const [followed, cancelAnswer] = await Promise.all([
      call.stream ? stream(call, follower) : poll(call, follower),
      call.cancel ? cancel(call, third) : undefined,
    ]);
    if (!followed || (call.cancel && !cancelAnswer)) {
      return;
    }
    let status = followed;
    if (status.status === "running") {
      // Its follower still says running, `lateMs` past its sleep: is it, or was the follower not told?
      status = await readStatus(call, third);
      if (!status) {
        return;
      }
      if (status.status === "running") {
        fail("late", call, `still running on ${name(follower)} and ${name(third)}: ${JSON.stringify(status)}`);
        return;
      }
      fail("slow", call, `${name(follower)} still said running; ${name(third)} says ${status.status}`);
    } else if (typeof status.result?.duration === "number") {
      // The run started after the POST was sent, so it ended at sentAt + duration or later: this lag is an upper bound.
      const lag = Math.max(0, Math.round(Date.now() - sentAt - status.result.duration));
      lags.push(lag);
      window.maxLag = Math.max(window.maxLag, lag);
      if (lag > slowMs) {
        const how = call.stream ? "event stream" : "long poll";
        fail("slow", call, `its ${how} on ${name(follower)} learned its end (${status.status}) ${lag} ms after it`);
      }
    }
    check(call, status, cancelAnswer);
  };

  const header = [
    "   t s",
    ...servers.map((_, i) => `inst${i + 1} RSS`),
    "redis MiB",
    "   keys",
    "chans",
    "start/s",
    "done/s",
    "cancel/s",
    "prog/s",
    "lag max",
    ...ERROR_KINDS.map((kind) => pad(kind, 5)),
  ];
  console.log(
    `async soak: ${seconds} s, ${instances} instances, ${workers} workers, Bench.Sleep ${callMs / 2}-${callMs * 1.5} ms` +
      ` (progress every 100 ms), ${Math.round(cancelShare * 100)}% cancelled, ${Math.round(streamShare * 100)}% followed` +
      ` by event stream and the rest by long polls (wait=${POLL_WAIT_SECONDS}), slow past ${slowMs} ms, late past` +
      ` ${lateMs} ms, retention ${retentionMs} ms, on ${redis.url}`,
  );
  console.log(header.join(" | "));
  const startedAt = Date.now();
  let sampledAt = startedAt;
  const sample = async (label) => {
    const memory = await redisMemory(admin);
    const channels = (await admin.pubsub("CHANNELS", "*")).length;
    const now = Date.now();
    const perSecond = (count) => ((count * 1_000) / Math.max(1, now - sampledAt)).toFixed(0);
    const row = [
      pad(label ?? Math.round((now - startedAt) / 1000), 6),
      ...servers.map((server) => pad(rssMiB(server.pid).toFixed(1), 9)),
      pad(mib(memory.used), 9),
      pad(memory.keys, 7),
      pad(channels, 5),
      pad(perSecond(window.started), 7),
      pad(perSecond(window.completed), 6),
      pad(perSecond(window.cancelled), 8),
      pad(perSecond(window.progress), 6),
      pad(window.maxLag, 7),
      ...ERROR_KINDS.map((kind) => pad(errors[kind], 5)),
    ];
    window = newCounts();
    sampledAt = now;
    console.log(row.join(" | "));
  };
  await sample();
  const timer = setInterval(() => sample().catch((error) => console.error(error.message)), sampleSeconds * 1000);
  const stopAt = startedAt + seconds * 1_000;
  let tags = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      for (let k = 0; Date.now() < stopAt; k++) {
        await oneCall((worker + k) % instances, tags++);
      }
    }),
  );
  clearInterval(timer);
  await sample();

  // The calls confirmed in the last half of the retention window, read once more through the instance that ran
  // them: their records must still be there and say the same.
  const queue = ended.filter((entry) => entry.at > Date.now() - retentionMs / 2).slice(-RECHECK_MAX);
  const rechecked = queue.length;
  await Promise.all(
    Array.from({ length: RECHECK_CONCURRENCY }, async () => {
      for (let entry = queue.shift(); entry; entry = queue.shift()) {
        const status = await readStatus(entry.call, servers[entry.call.runner]);
        if (status && status.status !== entry.status) {
          fail("wrong", entry.call, `read again on inst${entry.call.runner + 1}: ${JSON.stringify(status)}`);
        }
      }
    }),
  );

  // Past the retention window the records are gone: what Redis holds then is what the load left behind.
  await sleep(retentionMs + 2_000);
  await sample("+ret");

  lags.sort((a, b) => a - b);
  const unconfirmed = totals.started - totals.completed - totals.cancelled;
  console.log(
    `total: ${totals.started} calls started (${(totals.started / seconds).toFixed(0)}/s); ${totals.completed} completed` +
      ` with their value (${totals.cancelLate} of them cancelled too late), ${totals.cancelled} cancelled;` +
      ` calls without a confirmed end: ${unconfirmed}; ${totals.progress} progress updates followed;` +
      ` end seen by the follower after p50 ${quantile(lags, 0.5)} ms, p99 ${quantile(lags, 0.99)} ms, max` +
      ` ${quantile(lags, 1)} ms; ${rechecked} ends read again at the end;` +
      ` errors: ${ERROR_KINDS.map((kind) => `${errors[kind]} ${kind}`).join(", ")}`,
  );
  for (const example of examples) {
    console.log(`  ${example}`);
  }
  admin.disconnect();
  await Promise.all(servers.map((server) => server.stop()));
  await redis.stop();
  return { errors: ERROR_KINDS.reduce((sum, kind) => sum + errors[kind], 0), unconfirmed };
}
