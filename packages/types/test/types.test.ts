// Type tests: pins the shapes consumers rely on. They fail `tsc --noEmit`, which runs before vitest.
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expectTypeOf, it } from "vitest";
import type {
  AuthorizationChallengeCheckResponse,
  CallToolEnvelope,
  CallToolFailure,
  CallToolRequest,
  CallToolResponse,
  CallToolResultEnvelope,
  CallToolSuccess,
  ChallengeStatus,
  components,
  OxpPath,
  paths,
  ServerErrorResponse,
  ToolDefinition,
  ToolError,
  ToolListResponse,
  ValidationErrorResponse,
} from "../src/index.js";
import { type CHALLENGE_STATUSES, type OXP_ROUTES, OXP_VERSION, SUPPORTED_OXP_VERSIONS } from "../src/index.js";

type Schemas = components["schemas"];
type JsonBody<T> = T extends { content: { "application/json": infer B } } ? B : never;

describe("CallToolResponse", () => {
  it("is a union discriminated on success", () => {
    expectTypeOf<CallToolResponse>().toEqualTypeOf<CallToolSuccess | CallToolFailure>();
    const narrow = (response: CallToolResponse) => {
      if (response.success) {
        expectTypeOf(response).toEqualTypeOf<CallToolSuccess>();
        expectTypeOf(response.value).toBeUnknown();
        // @ts-expect-error a success has no error
        response.error;
      } else {
        expectTypeOf(response).toEqualTypeOf<CallToolFailure>();
        expectTypeOf(response.error).toEqualTypeOf<ToolError>();
        // @ts-expect-error a failure has no value
        response.value;
      }
    };
    expectTypeOf(narrow).toBeFunction();
  });

  verifies(
    ["response.exactly-one-outcome", "response.no-extra-properties"],
    "has no index signature and rejects value and error together",
    () => {
      expectTypeOf<keyof CallToolSuccess>().toEqualTypeOf<"call_id" | "duration" | "success" | "value">();
      expectTypeOf<keyof CallToolFailure>().toEqualTypeOf<"call_id" | "duration" | "success" | "error">();
      // @ts-expect-error value and error cannot stand together
      const both: CallToolResponse = { call_id: "c", duration: 1, success: true, value: 1, error: { message: "x" } };
      // @ts-expect-error success: false needs an error
      const noError: CallToolResponse = { call_id: "c", duration: 1, success: false };
      expectTypeOf(both).not.toBeNever();
      expectTypeOf(noError).not.toBeNever();
    },
  );

  it("retry hints are typed", () => {
    expectTypeOf<ToolError["retry_after_ms"]>().toEqualTypeOf<number | undefined>();
    expectTypeOf<ToolError["can_retry"]>().toEqualTypeOf<boolean | undefined>();
  });
});

describe("openapi-typescript and json-schema-to-typescript agree", () => {
  // The two generators spell some shapes differently (an intersection where the other has an index
  // signature, openapi-typescript's OneOf helper), so the check is assignability both ways.
  it("on every protocol object", () => {
    expectTypeOf<Schemas["CallToolResponse"]>().toEqualTypeOf<CallToolResponse>();
    expectTypeOf<Schemas["CallToolRequest"]>().toExtend<CallToolRequest>();
    expectTypeOf<CallToolRequest>().toExtend<Schemas["CallToolRequest"]>();
    expectTypeOf<Schemas["ToolDefinition"]>().toExtend<ToolDefinition>();
    expectTypeOf<ToolDefinition>().toExtend<Schemas["ToolDefinition"]>();
    expectTypeOf<Schemas["ToolListResponse"]>().toExtend<ToolListResponse>();
    expectTypeOf<ToolListResponse>().toExtend<Schemas["ToolListResponse"]>();
    expectTypeOf<Schemas["ServerErrorResponse"]>().toEqualTypeOf<ServerErrorResponse>();
    expectTypeOf<Schemas["ValidationErrorResponse"]>().toEqualTypeOf<ValidationErrorResponse>();
  });
});

describe("paths", () => {
  it("lists the four 1.0 routes and the extensions' seven", () => {
    expectTypeOf<OxpPath>().toEqualTypeOf<
      | "/health"
      | "/.well-known/oxp"
      | "/.well-known/oauth-protected-resource"
      | "/connections"
      | "/connections/{connection_id}"
      | "/tools"
      | "/toolkits"
      | "/tools/call"
      | "/tools/calls/{call_id}"
      | "/tools/calls/{call_id}/events"
      | "/authorization/challenges/{challenge_id}"
    >();
  });

  it("OXP_ROUTES names the same paths as `paths`", () => {
    expectTypeOf<(typeof OXP_ROUTES)[number]["path"]>().toEqualTypeOf<OxpPath>();
  });

  verifies("spec.401-has-body", "POST /tools/call takes the flat request or the envelope, and answers in kind", () => {
    type Call = paths["/tools/call"]["post"];
    type Body = JsonBody<Call["requestBody"]>;
    expectTypeOf<CallToolRequest>().toExtend<Body>();
    expectTypeOf<CallToolEnvelope>().toExtend<Body>();
    expectTypeOf<Body>().toExtend<CallToolRequest | CallToolEnvelope>();
    type Answer = JsonBody<Call["responses"][200]>;
    expectTypeOf<CallToolResponse>().toExtend<Answer>();
    expectTypeOf<CallToolResultEnvelope>().toExtend<Answer>();
    expectTypeOf<Answer>().toExtend<CallToolResponse | CallToolResultEnvelope>();
    expectTypeOf<JsonBody<Call["responses"][422]>>().toEqualTypeOf<ValidationErrorResponse>();
    expectTypeOf<JsonBody<Call["responses"][401]>>().toEqualTypeOf<ServerErrorResponse>();
  });

  it("GET /tools answers a ToolListResponse, or a ToolSearchResponse for a search", () => {
    expectTypeOf<JsonBody<paths["/tools"]["get"]["responses"][200]>>().toEqualTypeOf<
      Schemas["ToolListResponse"] | Schemas["ToolSearchResponse"]
    >();
  });

  it("GET /toolkits answers a ToolkitListResponse", () => {
    expectTypeOf<JsonBody<paths["/toolkits"]["get"]["responses"][200]>>().toEqualTypeOf<
      Schemas["ToolkitListResponse"]
    >();
  });

  it("the OXP-Version header is typed from the spec", () => {
    type Header = NonNullable<paths["/tools"]["get"]["parameters"]["header"]>["OXP-Version"];
    expectTypeOf<Header>().toEqualTypeOf<"1.0" | "1" | "1.0.0" | undefined>();
    expectTypeOf(OXP_VERSION).toEqualTypeOf<"1.0">();
    expectTypeOf(SUPPORTED_OXP_VERSIONS).toEqualTypeOf<readonly ["1.0", "1", "1.0.0"]>();
  });

  it("ChallengeStatus is the check response's status, and CHALLENGE_STATUSES lists exactly its values", () => {
    expectTypeOf<ChallengeStatus>().toEqualTypeOf<AuthorizationChallengeCheckResponse["status"]>();
    expectTypeOf<(typeof CHALLENGE_STATUSES)[number]>().toEqualTypeOf<ChallengeStatus>();
  });
});
