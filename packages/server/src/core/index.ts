/**
 * @otc/server/core: the protocol core without HTTP, for calling tools from something that is not an HTTP request (a
 * queue worker, another transport). To serve HTTP on another host, build on the request pipeline instead
 * (`@otc/server/adapter`): it does every HTTP step of the protocol. Every export here is public API; the rest of
 * src/core is not.
 *
 * @example
 * const core = new OxpCore({ tools });
 * const { request, envelope } = parseCallBody(JSON.parse(body)); // 400 WireError when it breaks the spec
 * const answer = wrapResponse(await core.call(request, { principal: "anonymous", baseUrl }), envelope);
 */
export { type CallBody, checkDepth, isEnvelope, parseCallBody, unwrapCallBody, wrapResponse } from "./call-body.js";
export { CatalogSearch, type SearchQuery, type SearchScope, type ToolkitDescriptions } from "./catalog-search.js";
export { type Clock, type ClockTimer, everyOn, sleepOn, systemClock, unrefTimer } from "./clock.js";
export { type ConsoleLoggerOptions, consoleLogger } from "./console-logger.js";
export { WIRE_ERROR_STATUS } from "./errors.js";
export type {
  InputValidatorChoice,
  IssueKind,
  SchemaIssue,
  SchemaValidator,
  SchemaValidators,
} from "./input-validation.js";
export { type CallMeta, type CoreLogger, OxpCore, type OxpCoreOptions, type ToolList } from "./oxp-core.js";
export {
  searchTokens,
  type ToolMatch,
  ToolSearchIndex,
  type ToolSearchOptions,
  type ToolSearchPage,
} from "./tool-search.js";
