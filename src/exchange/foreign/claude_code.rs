//! A Claude Code memory folder, read (spec/import-formats.md#claude-code).
//!
//! The same shape as a memdir directory: one `*.md` file per memory with `name`,
//! `description` and `type` (user, feedback, project, reference) in its frontmatter,
//! and a `MEMORY.md` index, which is ignored (memdir rebuilds its own). Claude Code
//! writes no dates, so a missing `created`/`updated` is today. Pure: text in, values out.

use chrono::NaiveDate;

use crate::exchange::blob::{Converted, Incoming, IncomingFile, Skipped};
use crate::exchange::foreign::{self, ForeignError, SourceFile};
use crate::memory::frontmatter;

/// Reads the folder's files. A file whose frontmatter cannot be read refuses the
/// whole folder, naming the file and line; files in subfolders are not memories of
/// this format and are reported and skipped.
pub fn decode(files: &[SourceFile], today: NaiveDate) -> Result<Incoming, ForeignError> {
    let mut out = Incoming::default();
    let mut memories: Vec<&SourceFile> = Vec::new();
    for f in files {
        if f.path == crate::memory::layout::INDEX_FILE {
            continue;
        }
        if f.path.contains('/') {
            out.skipped.push(Skipped {
                item: f.path.clone(),
                reason: "in a subfolder; a Claude Code memory folder keeps its memories at the top"
                    .into(),
            });
            continue;
        }
        if f.path.ends_with(".md") {
            memories.push(f);
        }
    }
    let stems: Vec<&str> = memories
        .iter()
        .map(|f| f.path.strip_suffix(".md").unwrap_or(&f.path))
        .collect();
    let keys = foreign::keys_for(&stems, "memory");
    let date = today.format("%Y-%m-%d").to_string();
    for (f, (key, why)) in memories.iter().zip(keys) {
        let bad = |e| foreign::frontmatter_error(&f.path, e);
        let text = frontmatter::with_dates(&f.text, &date).map_err(bad)?;
        let p = frontmatter::parse_portable(&text).map_err(bad)?;
        let mut reasons: Vec<String> = why.into_iter().collect();
        if !p.conversions.is_empty() {
            reasons.push(format!("{}; stored as YAML", p.conversions.join("; ")));
        }
        if !reasons.is_empty() {
            out.converted.push(Converted {
                item: f.path.clone(),
                reason: reasons.join("; "),
            });
        }
        out.files.push(IncomingFile {
            key,
            text: p.text,
            parsed: p.parsed,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 4, 14).unwrap()
    }

    #[test]
    fn memories_get_todays_dates_and_the_index_is_ignored() {
        let files = [
            file("MEMORY.md", "# Memory\n- [Role](user_role.md)\n"),
            file(
                "user_role.md",
                "---\r\nname: Role\r\ndescription: data scientist\r\ntype: user\r\n---\r\n\r\nWorks on logs.\r\n",
            ),
            file(
                "Feedback Tests.md",
                "---\nname: Tests\ndescription: real db\ntype: feedback\ncreated: 2026-01-02\n---\n\nNo mocks.\n",
            ),
        ];
        let inc = decode(&files, today()).unwrap();
        let keys: Vec<&str> = inc.files.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, vec!["user_role", "feedback_tests"]);
        assert_eq!(
            inc.files[0].text,
            "---\nname: Role\ndescription: data scientist\ntype: user\ncreated: 2026-04-14\nupdated: 2026-04-14\n---\n\nWorks on logs.\n"
        );
        assert_eq!(inc.files[1].parsed.meta.created.text, "2026-01-02");
        assert_eq!(inc.files[1].parsed.meta.updated.text, "2026-04-14");
        assert_eq!(inc.converted.len(), 1);
    }

    #[test]
    fn malformed_frontmatter_refuses_the_folder_naming_file_and_line() {
        let files = [
            file(
                "a.md",
                "---\nname: A\ndescription: d\ntype: user\n---\n\nok\n",
            ),
            file(
                "b.md",
                "---\nname: B\ndescription: [unclosed\ntype: user\n---\n",
            ),
        ];
        match decode(&files, today()) {
            Err(ForeignError::Line { file, line, .. }) => {
                assert_eq!(file, "b.md");
                assert!(line >= 2, "{line}");
            }
            other => panic!("{other:?}"),
        }
    }
}
