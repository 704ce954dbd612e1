//! An agent loop on memdir: build the context block before each turn, then remember
//! what is worth keeping and note what happened after it.
//!
//! The "model" is a stand-in that returns fixed replies, so the example runs offline:
//!
//! ```text
//! cargo run --example agent_loop              # in a temporary directory
//! cargo run --example agent_loop -- ./memory  # in a directory you can open afterwards
//! ```

use std::path::PathBuf;

use memdir::{ContextRequest, Draft, Memory, RecallRequest};
use serde_json::{Map, Value, json};

/// What the model returns for a turn: its reply, and the memories it asked to keep
/// (a real agent gets these from the model's `remember` tool calls).
struct Reply {
    text: String,
    remember: Vec<Draft>,
}

/// Stands in for an LLM call: a real agent sends `system` and `user` to its model.
fn fake_model(system: &str, user: &str) -> Reply {
    let knows_saturdays = system.contains("Saturdays");
    if user.contains("5-a-side") {
        Reply {
            text: "Noted: Saturday 5-a-side, and I'll keep feedback short and direct.".into(),
            remember: vec![
                Draft {
                    key: "user_football".into(),
                    name: "Football".into(),
                    description: "plays 5-a-side every Saturday morning".into(),
                    kind: "user".into(),
                    body: "Plays 5-a-side football on Saturdays at 10:00.".into(),
                    tags: Some(vec!["football".into()]),
                    ..Draft::default()
                },
                Draft {
                    key: "feedback_brevity".into(),
                    name: "Brevity".into(),
                    description: "wants short, direct feedback".into(),
                    kind: "feedback".into(),
                    body: "Keep feedback short and direct.\n\n**Why:** the user asked for it.\n**How to apply:** lead with the issue, then the fix.".into(),
                    important: Some(true),
                    ..Draft::default()
                },
            ],
        }
    } else if knows_saturdays {
        Reply {
            text: "Rest on Friday evening: you play on Saturday morning.".into(),
            remember: Vec::new(),
        }
    } else {
        Reply {
            text: "When do you usually play?".into(),
            remember: Vec::new(),
        }
    }
}

fn fields(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// One turn of the loop.
fn turn(mem: &Memory, user: &str) -> Result<String, memdir::Error> {
    // 1. Before the turn: the context block, ranked for the user's message, goes into
    //    the system prompt.
    let block = mem
        .context(&ContextRequest::new(2048).with_query(user))?
        .block;
    let system = format!(
        "You are a football coach.\n\nWhat you remember about the user:\n\n{}",
        block.text
    );
    mem.note("user_said", fields(&[("text", json!(user))]))?;

    // 2. The model call.
    let reply = fake_model(&system, user);

    // 3. After the turn: keep what the model asked to remember, log what happened.
    for draft in &reply.remember {
        let outcome = mem.write(draft)?;
        println!("  remember {} -> {outcome:?}", draft.key);
    }
    mem.note("assistant_said", fields(&[("text", json!(reply.text))]))?;
    Ok(reply.text)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A directory a person can open in an editor; a temporary one by default.
    let tmp;
    let dir = match std::env::args().nth(1) {
        Some(d) => PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().join("memory")
        }
    };
    let mem = Memory::open(&dir)?;
    mem.init()?;

    for user in [
        "I play 5-a-side on Saturdays. Keep your feedback short.",
        "What should I do on Friday evening?",
    ] {
        println!("user: {user}");
        let answer = turn(&mem, user)?;
        println!("agent: {answer}");
    }

    // Between turns the agent (or a person) can search and list what it knows.
    let hits = mem.recall(&RecallRequest::new("saturday", 5))?.hits;
    println!(
        "\nrecall \"saturday\": {:?}",
        hits.iter().map(|h| &h.key).collect::<Vec<_>>()
    );
    let block = mem.context(&ContextRequest::new(512))?.block;
    println!(
        "\ncontext block ({} of {} tokens):\n{}",
        block.tokens, block.max_tokens, block.text
    );
    println!("memory directory: {}", dir.display());
    Ok(())
}
