/** A challenge's check_url (docs/protocol.md 3.3 step 8): `OXP-Version`, the challenge id decoded (400), then the challenge's status. */
import { ANSWER_KIND } from "../answers.js";
import { checkVersion, decodedSegment, type RouteContext, type RouteHandler } from "./context.js";

/** `GET` a check_url: the status of the authorization challenge its last segment names. */
export function checkRoute(context: RouteContext): RouteHandler {
  return async (exchange, route, _principal, headers) => {
    await checkVersion(context, exchange, route.name);
    const challengeId = decodedSegment(route);
    return context.answer(
      200,
      JSON.stringify(await context.core.checkChallenge(challengeId)),
      ANSWER_KIND.check,
      headers,
    );
  };
}
