//! Prompts, the `memory://{key}` resource template and argument completion
//! (spec/mcp.md#prompts, #resource-template-and-completion).
//!
//! The prompts teach an agent to use memdir's own tools: `remember_conversation`
//! (what is worth keeping from the conversation, and how to store it without
//! duplicates or secrets) and `review_memories` (the memories listed briefly, and how
//! to merge duplicates and forget stale ones). Completion offers memory keys for the
//! template's `key` and memory types for `review_memories`' `type`.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompletionInfo, GetPromptResult, Prompt, PromptArgument, PromptMessage,
    Reference, ResourceTemplate, Role,
};
use serde_json::{Map, Value};

use super::core::Shared;
use memdir::Error;
use memdir::ListRequest;

/// The URI template of one memory.
pub const KEY_TEMPLATE: &str = "memory://{key}";
/// How many memories `review_memories` lists before saying how many more there are.
pub const REVIEW_MAX_LISTED: usize = 200;
/// The most values one completion returns (the MCP limit).
pub const COMPLETION_MAX: usize = 100;

const TYPES: [&str; 4] = ["user", "feedback", "project", "reference"];

/// `resources/templates/list`.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(KEY_TEMPLATE, "memory")
            .with_title("A memory by key")
            .with_description(
                "One memory file, byte for byte (Markdown with YAML frontmatter); key is the memory's key, e.g. user_role. completion/complete offers the keys.",
            )
            .with_mime_type("text/markdown"),
    ]
}

/// `prompts/list`.
pub fn list() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "remember_conversation",
            Some("Remember what matters from this conversation: choose what is worth keeping, update existing memories instead of duplicating them, and never store secrets."),
            Some(vec![
                PromptArgument::new("focus")
                    .with_description("Optional: what to concentrate on, e.g. `the user's training plan`.")
                    .with_required(false),
            ]),
        )
        .with_title("Remember this conversation"),
        Prompt::new(
            "review_memories",
            Some("Review and consolidate the memories: merge duplicates, fix keys and descriptions, forget what is stale or wrong."),
            Some(vec![
                PromptArgument::new("type")
                    .with_description("Optional: review only memories of this type (user, feedback, project, reference).")
                    .with_required(false),
            ]),
        )
        .with_title("Review memories"),
    ]
}

fn unknown_prompt(name: &str) -> McpError {
    McpError::invalid_params(
        memdir::report::lines(
            &format!("no prompt `{name}`"),
            Some("the prompts are remember_conversation and review_memories"),
        ),
        None,
    )
}

/// The arguments of a prompt as strings; an argument it does not take is an error.
fn arguments(
    prompt: &str,
    args: Option<&Map<String, Value>>,
    known: &[&str],
) -> Result<Map<String, Value>, McpError> {
    let args = args.cloned().unwrap_or_default();
    for (k, v) in &args {
        if !known.contains(&k.as_str()) {
            return Err(McpError::invalid_params(
                memdir::report::lines(
                    &format!(
                        "prompt `{prompt}` takes no argument `{k}`; it takes {}",
                        known.join(", ")
                    ),
                    None,
                ),
                None,
            ));
        }
        if !v.is_string() && !v.is_null() {
            return Err(McpError::invalid_params(
                memdir::report::lines(
                    &format!("prompt `{prompt}`: argument `{k}` must be a string"),
                    None,
                ),
                None,
            ));
        }
    }
    Ok(args)
}

fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The text of `remember_conversation`.
fn remember_text(focus: Option<&str>) -> String {
    let mut t = String::from(
        "Review this conversation and save what is worth remembering in memdir, the durable memory you share with the user (Markdown files they can read and edit).\n\n",
    );
    if let Some(f) = focus {
        t.push_str(&format!("Concentrate on: {f}\n\n"));
    }
    t.push_str(
        "1. First look at what is already stored: call memory_context with the conversation's main topic as query, or recall with a few key words, and list_memories when you need the keys. Do not create a memory that already exists under another key.\n\
2. Choose only what will still matter in a later conversation:\n\
   - type `user`: who the user is, their role, situation and preferences;\n\
   - type `feedback`: how they want you to work, corrections and what they confirmed; write the rule, then **Why:** and **How to apply:** lines;\n\
   - type `project`: ongoing work, goals, decisions and their reasons, state and dates (write dates as YYYY-MM-DD, not `next week`);\n\
   - type `reference`: where to find things (documents, systems, people to ask).\n\
   Skip small talk, one-off details, guesses, and anything that can be read again from code or documents.\n\
3. Keys are lowercase snake_case, `<type>_<topic>` (user_role, feedback_tone, project_spring_league), stable and specific. One memory per topic; description is one line saying what the memory holds.\n\
4. Update rather than duplicate. When a memory on the topic exists: add to it with edit_memory (append, prepend, replace_section under a heading, or find_replace for a changed fact) or rewrite it with remember using the same key and replace: true (or the expected_hash read_memory gave); move it with rename_memory if its key no longer fits; forget (with a reason) a memory that turned out wrong.\n\
5. Never store secrets: API keys, tokens, passwords, private keys or connection strings. memdir refuses them; write where the secret is kept instead (\"the deploy key is in the team's 1Password\").\n\
6. Mark a memory important only when the user said it must never be forgotten.\n\
7. When done, tell the user in one or two lines which memories you created or updated (their keys), so they can correct you.",
    );
    t
}

/// The text of `review_memories`: the memories briefly, then what to do with them.
fn review_text(s: &Shared, kind: Option<&str>) -> Result<String, Error> {
    let items = s.mem.list(&ListRequest::of_type(kind))?.memories;
    let mut t =
        String::from("Review the memories in memdir and consolidate them, using its tools.\n\n");
    match kind {
        Some(k) => t.push_str(&format!("Memories of type {k} ({}):\n", items.len())),
        None => t.push_str(&format!(
            "Memories ({}), most salient first:\n",
            items.len()
        )),
    }
    for i in items.iter().take(REVIEW_MAX_LISTED) {
        t.push_str(&format!(
            "- {} ({}, updated {}): {} — {}\n",
            i.key, i.kind, i.updated, i.name, i.description
        ));
    }
    if items.len() > REVIEW_MAX_LISTED {
        t.push_str(&format!(
            "… {} more not listed; call list_memories with a cursor to page through them.\n",
            items.len() - REVIEW_MAX_LISTED
        ));
    }
    if items.is_empty() {
        t.push_str("(none)\n");
    }
    t.push_str(
        "\nThen:\n\
1. Find duplicates and near duplicates (the same fact or topic under two keys). Read both with read_memory, keep the better key, fold what only the other holds into it with edit_memory (append, or replace_section), then forget the other with reason \"merged into <key>\".\n\
2. Find stale or wrong memories: a finished project, a preference the user changed, a date in the past. Update them with edit_memory (find_replace or replace_section) when part still holds; forget them (with a reason) when nothing does. recent_activity shows what happened lately.\n\
3. Fix what makes memories hard to find: rename_memory a key that does not follow `<type>_<topic>` or no longer fits, and edit_memory a vague name or description (one line saying what the memory holds).\n\
4. Do not forget a memory the user marked important or asked to keep, and never copy a secret into a memory. When unsure whether something is still true, ask the user instead of deleting it.\n\
5. Finish with a short list of what you merged, updated, renamed and forgot, with the keys.",
    );
    Ok(t)
}

/// `prompts/get`.
pub fn get(
    s: &Shared,
    name: &str,
    args: Option<&Map<String, Value>>,
) -> Result<GetPromptResult, McpError> {
    let (description, text) = match name {
        "remember_conversation" => {
            let a = arguments(name, args, &["focus"])?;
            (
                "Remember what matters from this conversation",
                remember_text(arg(&a, "focus")),
            )
        }
        "review_memories" => {
            let a = arguments(name, args, &["type"])?;
            let text = review_text(s, arg(&a, "type")).map_err(|e| {
                let (lines, _) =
                    memdir::report::Failure::from(e).report(memdir::report::Front::Mcp);
                McpError::invalid_params(lines.join("\n"), None)
            })?;
            ("Review and consolidate memories", text)
        }
        other => return Err(unknown_prompt(other)),
    };
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(description),
    )
}

/// Values that start with `prefix` (case-insensitive), sorted, at most
/// [`COMPLETION_MAX`], with the total and whether more remain.
fn matching(mut all: Vec<String>, prefix: &str) -> CompletionInfo {
    let p = prefix.to_lowercase();
    all.retain(|v| v.to_lowercase().starts_with(&p));
    all.sort();
    all.dedup();
    let total = all.len();
    all.truncate(COMPLETION_MAX);
    let more = total > all.len();
    CompletionInfo::with_pagination(all, Some(u32::try_from(total).unwrap_or(u32::MAX)), more)
        .unwrap_or_default()
}

/// `completion/complete`: memory keys for the template's `key`, types for
/// `review_memories`' `type`; nothing for other arguments.
pub fn complete(s: &Shared, req: &CompleteRequestParams) -> Result<CompletionInfo, McpError> {
    let value = req.argument.value.as_str();
    match &req.r#ref {
        Reference::Resource(r) if r.uri == KEY_TEMPLATE => {
            if req.argument.name != "key" {
                return Ok(CompletionInfo::default());
            }
            let keys = s.mem.memory_file_keys().map_err(|e| {
                McpError::internal_error(memdir::report::lines(&e.to_string(), None), None)
            })?;
            Ok(matching(keys, value))
        }
        Reference::Resource(r) => Err(McpError::invalid_params(
            memdir::report::lines(
                &format!("no resource template {}", r.uri),
                Some(&format!("the template is {KEY_TEMPLATE}")),
            ),
            None,
        )),
        Reference::Prompt(p) if p.name == "review_memories" => {
            if req.argument.name != "type" {
                return Ok(CompletionInfo::default());
            }
            let mut types: Vec<String> = TYPES.iter().map(|t| t.to_string()).collect();
            if let Ok(list) = s.mem.list(&ListRequest::new()) {
                types.extend(list.memories.into_iter().map(|i| i.kind));
            }
            Ok(matching(types, value))
        }
        Reference::Prompt(p) if p.name == "remember_conversation" => Ok(CompletionInfo::default()),
        Reference::Prompt(p) => Err(unknown_prompt(&p.name)),
        _ => Ok(CompletionInfo::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_is_a_bounded_prefix_match() {
        let keys: Vec<String> = (0..150).map(|i| format!("user_{i:03}")).collect();
        let mut all = keys.clone();
        all.push("project_x".into());
        let m = matching(all.clone(), "user_");
        assert_eq!(m.values.len(), 100);
        assert_eq!(m.total, Some(150));
        assert_eq!(m.has_more, Some(true));
        assert_eq!(m.values[0], "user_000");
        let m = matching(all.clone(), "PRO");
        assert_eq!(m.values, vec!["project_x".to_string()]);
        assert_eq!((m.total, m.has_more), (Some(1), Some(false)));
        let m = matching(all, "zzz");
        assert!(m.values.is_empty());
        assert_eq!(m.has_more, Some(false));
    }

    #[test]
    fn the_prompts_name_real_tools() {
        let text = remember_text(Some("training"));
        for tool in [
            "memory_context",
            "recall",
            "list_memories",
            "edit_memory",
            "remember",
            "rename_memory",
            "forget",
        ] {
            assert!(text.contains(tool), "{tool}");
        }
        assert!(text.contains("Concentrate on: training"));
        assert!(text.contains("Never store secrets"));
    }
}
