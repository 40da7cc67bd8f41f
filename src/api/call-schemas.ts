import { type ApiCallName, apiCalls } from "~/lib/protocol/api/calls.ts";

type Calls = typeof apiCalls;

/** A JSON call's route options: its body schema, and its answer's schema for 200 (lib/protocol/api/calls.ts). */
export function callSchemas<Name extends ApiCallName>(
  name: Name,
): { body: Calls[Name]["body"]; response: { 200: Calls[Name]["response"] } } {
  const call = apiCalls[name];
  return { body: call.body, response: { 200: call.response } };
}
