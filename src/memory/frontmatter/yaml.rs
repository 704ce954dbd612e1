//! The YAML library (serde-saphyr) behind one door: the options memdir reads with,
//! errors turned into file lines and columns, and writing one value. It is the only
//! code that calls the library; it must not know memdir's fields or a file's layout.

use serde_json::Value;

use super::FrontmatterError;

fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    // YAML 1.2 booleans: `no` stays the string "no"; `important: no` is an error.
    o.strict_booleans = true;
    // `0755` stays a string rather than becoming the number 755.
    o.leading_zero_numbers_as_strings = true;
    o
}

/// Parses a YAML block that starts on file line `first_line`; an error names the
/// file line and column.
pub(super) fn parse_yaml(yaml: &str, first_line: usize) -> Result<Value, FrontmatterError> {
    serde_saphyr::from_str_with_options::<Value>(yaml, yaml_options()).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line() as usize, l.column() as usize))
            .unwrap_or((1, 1));
        FrontmatterError::Yaml {
            line: line + first_line - 1,
            column,
            message: bare_message(&e.without_snippet().to_string()),
        }
    })
}

/// The library's message without its own `error: line L column C:` prefix, which we
/// replace by file-relative positions.
fn bare_message(s: &str) -> String {
    let mut s = s.lines().next().unwrap_or(s);
    s = s.strip_prefix("error: ").unwrap_or(s);
    if let Some(rest) = s.strip_prefix("line ")
        && let Some(pos) = rest.find(": ")
    {
        s = &rest[pos + 2..];
    }
    // The library adds positions relative to the YAML block and advice about its own
    // options; neither helps a person editing the file.
    if let Some(pos) = s.rfind(" at line ") {
        s = &s[..pos];
    }
    if let Some(key) = s.strip_prefix("duplicate mapping key: ") {
        let key = key.split(',').next().unwrap_or(key);
        return format!("duplicate key `{key}`");
    }
    s.to_string()
}

/// Parses YAML text, or `None` when it is not YAML (no position needed).
pub(super) fn parse_value(yaml: &str) -> Option<Value> {
    serde_saphyr::from_str_with_options::<Value>(yaml, yaml_options()).ok()
}

/// YAML text of a value, or `None` when the library cannot write it.
pub(super) fn to_text(value: &Value) -> Option<String> {
    serde_saphyr::to_string(value).ok()
}
