/** @otc/ai: an OXP server's tools as agent frameworks' own tools; this entry holds what every framework's adapter shares. */
export {
  authorizationText,
  invalidInputText,
  type OxpApproval,
  type OxpCallContext,
  type OxpToolCallOptions,
  type OxpToolLoading,
  type OxpToolOutcome,
  type OxpToolSpec,
  type OxpToolsOptions,
  oxpToolSpecs,
  selectTools,
} from "./core.js";
export {
  type OxpFoundTool,
  type OxpSearchToolSpec,
  type OxpToolLoader,
  type OxpToolLoadOptions,
  type OxpToolSearchOutcome,
  type OxpToolSearchResult,
  oxpToolLoader,
  SEARCH_TOOL_NAME,
} from "./tool-loader.js";
