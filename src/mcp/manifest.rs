//! The three.ws agent manifest: the `memory` section that configures `memdir mcp`.
//!
//! A three.ws bundle keeps `agent/manifest.json` next to `agent/memory/`; its
//! `"memory": {"mode", "provider", "maxTokens"}` section says how the agent's memory
//! is kept and how large its context block may be. This module only parses bytes into
//! a [`MemoryConfig`] plus warnings; finding and reading the file is the caller's job.

use serde_json::Value;

/// How the memory is kept (spec/sync.md#configuration-memdirconfigtoml: sync modes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// In memory only: nothing is written to disk.
    None,
    /// The directory, no network (the default).
    Local,
    /// A sync mode (`ipfs`, `encrypted-ipfs`): the server still serves the directory.
    Sync(String),
    /// A value memdir does not know: the server serves the directory.
    Unknown(String),
}

/// The `memory` section of a manifest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryConfig {
    /// `None` when the manifest does not say.
    pub mode: Option<Mode>,
    pub provider: Option<String>,
    /// The default budget of `memory_context`.
    pub max_tokens: Option<usize>,
}

/// Parses a manifest. A file that is not a JSON object is an error (the message says
/// why); fields of the wrong type are ignored with a warning, so a manifest written
/// for a newer runtime still configures what it can.
pub fn parse(text: &str) -> Result<(MemoryConfig, Vec<String>), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(top) = doc else {
        return Err("not a JSON object".into());
    };
    let mut cfg = MemoryConfig::default();
    let mut warnings = Vec::new();
    let section = match top.get("memory") {
        None | Some(Value::Null) => return Ok((cfg, warnings)),
        Some(Value::Object(m)) => m,
        Some(_) => {
            warnings.push("`memory` is not an object; ignored".into());
            return Ok((cfg, warnings));
        }
    };
    match section.get("mode") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            cfg.mode = Some(match s.trim().to_ascii_lowercase().as_str() {
                "none" => Mode::None,
                "local" => Mode::Local,
                "ipfs" | "encrypted-ipfs" => Mode::Sync(s.trim().to_string()),
                _ => Mode::Unknown(s.clone()),
            })
        }
        Some(_) => warnings.push("`memory.mode` is not a string; ignored".into()),
    }
    match section.get("provider") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => cfg.provider = Some(s.clone()),
        Some(_) => warnings.push("`memory.provider` is not a string; ignored".into()),
    }
    match section.get("maxTokens") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64().filter(|n| *n > 0) {
            Some(n) => cfg.max_tokens = Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => warnings.push(format!(
                "`memory.maxTokens` is {v}, not a positive integer; ignored"
            )),
        },
    }
    Ok((cfg, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, mode: Option<Mode>, max_tokens: Option<usize>, warnings: usize) {
        let (cfg, w) = parse(input).unwrap();
        assert_eq!(cfg.mode, mode, "{input}");
        assert_eq!(cfg.max_tokens, max_tokens, "{input}");
        assert_eq!(w.len(), warnings, "{input}: {w:?}");
    }

    #[test]
    fn memory_section() {
        check(r#"{}"#, None, None, 0);
        check(r#"{"name":"agent"}"#, None, None, 0);
        check(r#"{"memory":{"mode":"local"}}"#, Some(Mode::Local), None, 0);
        check(
            r#"{"memory":{"mode":"none","maxTokens":1024}}"#,
            Some(Mode::None),
            Some(1024),
            0,
        );
        check(
            r#"{"memory":{"mode":"ipfs","provider":"pinata"}}"#,
            Some(Mode::Sync("ipfs".into())),
            None,
            0,
        );
        check(
            r#"{"memory":{"mode":"encrypted-ipfs"}}"#,
            Some(Mode::Sync("encrypted-ipfs".into())),
            None,
            0,
        );
        check(
            r#"{"memory":{"mode":"cloud"}}"#,
            Some(Mode::Unknown("cloud".into())),
            None,
            0,
        );
        check(
            "\u{feff}{\"memory\":{\"maxTokens\":512}}",
            None,
            Some(512),
            0,
        );
    }

    #[test]
    fn wrong_types_are_warnings() {
        check(r#"{"memory":"local"}"#, None, None, 1);
        check(r#"{"memory":{"mode":3}}"#, None, None, 1);
        check(r#"{"memory":{"maxTokens":-5}}"#, None, None, 1);
        check(r#"{"memory":{"maxTokens":0}}"#, None, None, 1);
        check(r#"{"memory":{"maxTokens":"2048"}}"#, None, None, 1);
        check(r#"{"memory":{"provider":[]}}"#, None, None, 1);
    }

    #[test]
    fn broken_files_are_errors() {
        assert!(parse("{").unwrap_err().starts_with("not valid JSON"));
        assert_eq!(parse("[]").unwrap_err(), "not a JSON object");
    }
}
