// Tool calls → Grammar: the text a model writes to call one (or, in parallel, several) of the
// request's functions, in its own tool-call format, with each call's arguments constrained by that
// function's JSON Schema (json_schema.h). What the server builds for tool_choice "required" or a
// named function (SamplingParams::structured, kind kToolCalls).
//
// Spec (JSON, produced by the server):
//   {
//     "format": "hermes" | "llama3_json" | "mistral",
//     "tools": [ {"type": "function", "function": {"name": "...", "description": "...",
//                                                  "parameters": {JSON Schema}, "strict": bool}}
//              | {"name": "...", "description": "...", "parameters": {JSON Schema}} ... ],
//     "mode": "required" | "named" | "auto",  // default "required": any of the tools; "auto":
//                                        // the text after the format's trigger
//                                        // (pagoda::tool_call_trigger, the constraint's
//                                        // StructuredOutputs::trigger)
//     "name": "<function>",              // mode "named" only: the one function allowed
//     "parallel": true | false           // default false: exactly one call
//   }
// A missing parameters schema means {"type":"object","properties":{}}. Names must be non-empty
// and distinct; every tool's schema must compile (errors name it: "tools[2].function.parameters:
// json_schema: ..."). Unknown keys are refused. tool_choice "auto" is mode "auto" with the
// format's trigger repeating: the model writes text or calls, and each call it opens is
// constrained. Triggers: hermes "<tool_call>" (then one call's text), llama3_json "{\"name\""
// (then the rest of one call), mistral "[TOOL_CALLS]" (then the list, parallel or not).
//
// Output (<args> is the call's arguments per its schema):
//   hermes (Qwen2.5, Hermes 2/3):  <tool_call>\n{"name": "<name>", "arguments":
//   <args>}\n</tool_call>
//                                  parallel: such blocks separated by "\n"
//   llama3_json (Llama 3.1-3.3):   {"name": "<name>", "parameters": <args>}
//                                  parallel: separated by "; "
//   mistral:                       [TOOL_CALLS][{"name": "<name>", "arguments": <args>}]
//                                  parallel: several objects in the list, separated by ", "
// The envelope's whitespace follows JsonSchemaOptions: flexible allows a bounded run of
// whitespace between its JSON tokens; compact writes json.dumps's ", " and ": " exactly (what the
// chat templates show the model).
#pragma once

#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"
#include "structured/json_schema.h"

namespace pagoda::structured {

Result<Grammar> tool_call_grammar(std::string_view spec_json,
                                  const JsonSchemaOptions& options = {});

}  // namespace pagoda::structured
