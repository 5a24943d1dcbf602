/** Checks a tool's requirements (user_id, then secrets, then authorization) and resolves what the tool gets. */
import type { CallToolContext, ToolAuthorizationChallenge, ToolRequirements } from "@otc/types";
import type { AuthorizationProvider, TokenStore } from "./authorization.js";
import { WireError } from "./errors.js";

/** What a tool receives once its requirements are met. */
export interface ResolvedRequirements {
  tokens: Record<string, string>;
  secrets: Record<string, string>;
}

/** What the requirement checks need from the server. */
export interface RequirementSources {
  providers: ReadonlyMap<string, AuthorizationProvider>;
  tokens: TokenStore;
  /** Secret values the server holds, by id; given only to tools that require them. */
  serverSecrets: Readonly<Record<string, string>>;
  /** The server's public base URL (no trailing slash), for check_url. */
  baseUrl: string;
  /** Path of the challenge check route below `baseUrl`, without the id. */
  checkPath: string;
  /** Who the server authenticated: tokens are held for (principal, user id), never shared across principals. */
  principal: string;
}

/** Sets an own property, so keys such as `__proto__` stay plain data. */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The first non-empty value per id of a context list (`secrets` or `authorization`). */
function byId<K extends "value" | "token">(
  items: readonly ({ id: string } & Record<K, string>)[] | undefined,
  field: K,
) {
  const out: Record<string, string> = {};
  for (const item of items ?? []) {
    const value = item[field];
    if (typeof value === "string" && value !== "" && !Object.hasOwn(out, item.id)) {
      setOwn(out, item.id, value);
    }
  }
  return out;
}

const covers = (granted: readonly string[], needed: readonly string[]) =>
  needed.every((scope) => granted.includes(scope));

/**
 * Resolves a call's tokens and secrets, or throws the 400 that names what is missing: user_id first,
 * then secrets (ids only, never values), then authorization (starting challenges where a provider can).
 */
/** The tokens and secrets a call sent, by id: all a tool without requirements gets. */
export function sentCredentials(context: CallToolContext | undefined): ResolvedRequirements {
  return { tokens: byId(context?.authorization, "token"), secrets: byId(context?.secrets, "value") };
}

export async function resolveRequirements(
  requirements: ToolRequirements | undefined,
  context: CallToolContext | undefined,
  sources: RequirementSources,
): Promise<ResolvedRequirements> {
  const userId = context?.user_id ? context.user_id : undefined;
  const { secrets, tokens } = sentCredentials(context);
  if (!requirements) {
    return { tokens, secrets };
  }

  if (requirements.user_id === true && userId === undefined) {
    throw new WireError("bad_request", "A user id is required to call this tool", {
      developerMessage: "The tool requires context.user_id, and the request has none (or an empty one).",
      missingRequirements: { user_id: true },
    });
  }

  const missingSecrets: string[] = [];
  for (const { id } of requirements.secrets ?? []) {
    if (Object.hasOwn(secrets, id)) {
      continue;
    }
    const held = Object.hasOwn(sources.serverSecrets, id) ? sources.serverSecrets[id] : undefined;
    if (held) {
      setOwn(secrets, id, held);
    } else {
      missingSecrets.push(id);
    }
  }
  if (missingSecrets.length > 0) {
    throw new WireError("bad_request", "A secret this tool needs was not provided", {
      developerMessage: `Missing secrets: ${missingSecrets.join(", ")}. Send them in context.secrets.`,
    });
  }

  const challenges: ToolAuthorizationChallenge[] = [];
  const unprovided: string[] = [];
  let needsUserId = false;
  for (const { id, oauth2 } of requirements.authorization ?? []) {
    if (Object.hasOwn(tokens, id)) {
      continue;
    }
    const scopes = oauth2?.scopes ?? [];
    const provider = sources.providers.get(id);
    if (userId === undefined) {
      if (provider) {
        needsUserId = true;
      } else {
        unprovided.push(id);
      }
      continue;
    }
    const owner = { principal: sources.principal, userId };
    const held = await sources.tokens.get(owner, id);
    if (held && covers(held.scopes, scopes)) {
      setOwn(tokens, id, held.token);
      continue;
    }
    if (!provider) {
      unprovided.push(id);
      continue;
    }
    const challengeId = `${provider.id}.${crypto.randomUUID()}`;
    const { url } = await provider.startChallenge({
      challengeId,
      owner,
      scopes,
      baseUrl: sources.baseUrl,
      tokens: sources.tokens,
    });
    challenges.push({
      id: challengeId,
      url,
      check_url: `${sources.baseUrl}${sources.checkPath}/${encodeURIComponent(challengeId)}`,
    });
  }
  if (needsUserId) {
    throw new WireError("bad_request", "Authorization required", {
      developerMessage: "The tool needs an authorization the server can obtain for a user; send context.user_id.",
      missingRequirements: { user_id: true },
    });
  }
  if (challenges.length > 0 || unprovided.length > 0) {
    const developerMessage =
      unprovided.length > 0
        ? `No token was sent for ${unprovided.join(", ")}, and this server has no authorization provider for ${unprovided.length > 1 ? "them" : "it"}.`
        : "Complete the challenges at their url, then retry the same call.";
    throw new WireError("bad_request", "Authorization required", {
      developerMessage,
      ...(challenges.length > 0 ? { missingRequirements: { authorization: challenges } } : {}),
    });
  }
  return { tokens, secrets };
}
