//! The schemas of the tools as the server lists them: input schemas made portable
//! (no tool declares an output schema, spec/mcp.md#schemas), and the usage errors for
//! arguments that do not fit an input schema. It must not call the engine.

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use memdir::Class;

/// Arguments a tool does not take (not a property of its input schema), refused
/// before the call with an error naming them (spec/mcp.md#errors).
pub(super) fn unknown_arguments(
    tool: &rmcp::model::Tool,
    args: Option<&Map<String, Value>>,
) -> Option<CallToolResult> {
    let props = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)?;
    let unknown: Vec<String> = args?
        .keys()
        .filter(|k| !props.contains_key(k.as_str()))
        .map(|k| format!("`{k}`"))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let known: Vec<&str> = props.keys().map(String::as_str).collect();
    let (noun, them) = if unknown.len() == 1 {
        ("argument", "it")
    } else {
        ("arguments", "them")
    };
    Some(argument_error(
        &tool.name,
        &format!(
            "unknown {noun} {}; `{}` takes {}; remove {them}",
            unknown.join(", "),
            tool.name,
            known.join(", ")
        ),
    ))
}

/// A usage error about a tool's arguments, as the CLI reports it.
fn argument_error(tool: &str, detail: &str) -> CallToolResult {
    let message = format!("invalid arguments for `{tool}`: {}", detail.trim());
    let hint =
        format!("the input schema of `{tool}` (tools/list) names its fields and their types");
    let mut out = CallToolResult::error(vec![ContentBlock::text(memdir::report::lines(
        &message,
        Some(&hint),
    ))]);
    out.structured_content = Some(json!({"error": {
        "message": message,
        "causes": [],
        "hint": hint,
        "exit_code": Class::Usage.exit_code(),
    }}));
    out
}

/// The JSON Schema formats (draft 2020-12) that validators such as Ajv know.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Makes a generated input schema portable (spec/mcp.md#schemas): no format outside
/// the standard ones (schemars writes `uint`, `double`), and no `type` arrays with
/// `null` nor `anyOf` alternatives that are `null` (an optional argument is omitted,
/// never null), so strict validators and strict function-calling schemas take it.
pub fn portable(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            if o.get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                o.remove("format");
            }
            if let Some(Value::Array(types)) = o.get("type") {
                let mut rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                let t = if rest.len() == 1 {
                    rest.remove(0)
                } else {
                    Value::Array(rest)
                };
                o.insert("type".into(), t);
                if o.get("default") == Some(&Value::Null) {
                    o.remove("default");
                }
            }
            // An optional nested object is `anyOf: [{$ref}, {type: null}]`: keep the
            // schema without the null.
            if let Some(Value::Array(any)) = o.get_mut("anyOf") {
                any.retain(|v| v.get("type").and_then(Value::as_str) != Some("null"));
                if any.len() == 1
                    && let Some(Value::Object(only)) = any.pop()
                {
                    o.remove("anyOf");
                    for (k, v) in only {
                        o.entry(k).or_insert(v);
                    }
                }
            }
            o.values_mut().for_each(portable);
        }
        Value::Array(a) => a.iter_mut().for_each(portable),
        _ => {}
    }
}

/// rmcp reports arguments that do not fit a tool's schema as a bare serde message;
/// say it the way the CLI reports usage errors, so the model can fix the call.
pub(super) fn explain_argument_error(tool: &str, response: CallToolResponse) -> CallToolResponse {
    let CallToolResponse::Complete(r) = &response else {
        return response;
    };
    let detail = match (r.is_error, r.content.first().and_then(|c| c.as_text())) {
        (Some(true), Some(t)) => t.text.strip_prefix("failed to deserialize parameters:"),
        _ => None,
    };
    let Some(detail) = detail else {
        return response;
    };
    argument_error(tool, detail).into()
}
