//! `memdir import`: import a portable blob or another memory tool's files
//! (spec/import-formats.md). Reads the input (a file, standard input or a folder);
//! the exchange wing converts it and the engine plans and writes.

use memdir::memory::printable::escape_line as esc;
use std::path::{Path, PathBuf};

use super::{Out, input};
use memdir::Error;
use memdir::Memory;
use memdir::exchange::blob::MAX_BLOB_BYTES;
use memdir::exchange::foreign::{ForeignError, Format, Source, SourceFile};
use memdir::exchange::merge::{Action, Strategy};
use memdir::report::Failure;

/// Import memories: a memory/0.1 blob, a Claude Code memory folder, an MCP memory.jsonl or a basic-memory project.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Formats (--from; detected from the content when not given):
  blob          a memory/0.1 JSON file from `memdir export` or the three.ws runtime
  claude-code   a Claude Code memory folder: KEY.md files with name, description and
                type (user, feedback, project, reference); MEMORY.md is ignored (the
                index is rebuilt); missing created/updated dates become today
  mcp-memory    the memory.jsonl of @modelcontextprotocol/server-memory: each entity
                becomes a memory (key from its name, observations as `- ` lines, type
                user for a person, project for a project, else reference), each
                relation a `- relationType:: [[key]]` line in its source's body
  basic-memory  a basic-memory project folder: each note becomes a memory (key from
                its permalink or title), `- rel [[Target]]` lines become
                `- rel:: [[key]]` with the target found by title or permalink

Examples:
  memdir import backup.json
  memdir import ~/.claude/projects/my-app/memory --dry-run
  memdir import ~/.local/share/memory/memory.jsonl --from mcp-memory
  memdir import ~/basic-memory --strategy replace

The whole input is validated before anything is written: a malformed line refuses it
naming the file and line, and nothing is written. A memory containing a secret is
reported and skipped. A name that is not a memdir key is imported under a safe key
(the same on every import) and reported; links to something not imported are kept as
written and reported. merge: on conflict (same key, other content) the local memory
wins; replace: the incoming one wins. A blob's timeline events are unioned as
multisets (idempotent); another format's import that writes something logs one
`imported` event. In a blob, a file name that could address a path outside the
directory refuses the blob; malformed frontmatter is reported and skipped; a key
forgotten here is not brought back by a version that is not newer than the forget."
)]
pub struct Args {
    /// The file or folder to import (`-` for standard input).
    pub file: PathBuf,
    /// The input format; detected from the content when not given.
    #[arg(long, value_name = "FORMAT", value_parser = ["blob", "claude-code", "mcp-memory", "basic-memory"])]
    pub from: Option<String>,
    /// merge (local wins on conflict) or replace (incoming wins).
    #[arg(long, default_value = "merge", value_parser = ["merge", "replace"])]
    pub strategy: String,
    /// Show the plan and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Reads one input file (or standard input for `-`) within the blob size bound: a
/// regular file only, refused over the bound before it is read.
fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    let limit = MAX_BLOB_BYTES as u64;
    Ok(if path.as_os_str() == "-" {
        input::read_stdin(limit)?
    } else {
        input::read_file(path, limit)?
    })
}

/// Reads every `*.md` file under a folder (dot entries and symbolic links skipped),
/// in path order, within the blob bounds: as many files and bytes as one blob may
/// hold, each file no larger than a memory file.
fn read_folder(dir: &Path) -> Result<Vec<SourceFile>, Failure> {
    use memdir::exchange::blob::{MAX_FILE_BYTES, MAX_FILES};
    let mut out = Vec::new();
    let mut total = 0usize;
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(dir).to_path_buf();
            Error::io(path, e.into())
        })?;
        if !entry.file_type().is_file() || entry.path().extension().is_none_or(|x| x != "md") {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(dir)
            .unwrap_or(entry.path())
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
        if len > MAX_FILE_BYTES as u64 {
            return Err(Error::TooLarge {
                path: entry.path().to_path_buf(),
                size: len,
                limit: MAX_FILE_BYTES as u64,
            }
            .into());
        }
        total += len as usize;
        let too_much = |what, count, limit| ForeignError::TooMuch {
            name: dir.display().to_string(),
            what,
            count,
            limit,
        };
        if out.len() >= MAX_FILES {
            return Err(too_much("`*.md` files", out.len() + 1, MAX_FILES).into());
        }
        if total > MAX_BLOB_BYTES {
            return Err(too_much("bytes of `*.md` files", total, MAX_BLOB_BYTES).into());
        }
        // Bounded and regular-only again: the file may have changed since the walk.
        let text = input::read_file_text(entry.path(), MAX_FILE_BYTES as u64)?;
        out.push(SourceFile { path: rel, text });
    }
    Ok(out)
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let format = a.from.as_deref().and_then(Format::parse);
    let strategy = Strategy::parse(&a.strategy).unwrap_or_default();
    let name = a.file.display().to_string();
    let report = if a.file.as_os_str() != "-" && a.file.is_dir() {
        let files = read_folder(&a.file)?;
        mem.import_from(
            &Source::Folder {
                name: &name,
                files: &files,
            },
            format,
            strategy,
            a.dry_run,
        )?
    } else {
        let bytes = read_file(&a.file)?;
        mem.import_from(
            &Source::File {
                name: &name,
                bytes: &bytes,
            },
            format,
            strategy,
            a.dry_run,
        )?
    };
    if out.is_json() {
        out.json(&report);
        return Ok(0);
    }
    let mut s = String::new();
    if report.format != "blob" {
        s.push_str(&format!("format: {}\n", esc(report.format)));
    }
    for d in &report.plan {
        let word = match d.action {
            Action::Added => "add",
            Action::Updated => "update",
            Action::Kept => "keep local",
            Action::Unchanged => "unchanged",
            Action::Forgotten => "skip (forgotten here)",
        };
        s.push_str(&format!("{word:<22} {}\n", esc(&d.key)));
    }
    // Items and reasons quote the imported file: one line each, whatever they hold.
    for c in &report.converted {
        s.push_str(&format!(
            "{:<22} {}: {}\n",
            "convert",
            esc(&c.item),
            esc(&c.reason)
        ));
    }
    for k in &report.skipped_items {
        s.push_str(&format!(
            "{:<22} {}: {}\n",
            "skip",
            esc(&k.item),
            esc(&k.reason)
        ));
    }
    for u in &report.unresolved {
        s.push_str(&format!(
            "{:<22} {}: {}\n",
            "unresolved link",
            esc(&u.item),
            esc(&u.reason)
        ));
    }
    let c = &report.counts;
    s.push_str(&format!(
        "{}{} added, {} updated, {} kept, {} unchanged, {} skipped; {} timeline events added\n",
        if report.dry_run {
            "dry run (nothing written): "
        } else {
            ""
        },
        c.added,
        c.updated,
        c.kept,
        c.unchanged,
        c.skipped,
        report.events_added
    ));
    out.text(&s);
    Ok(0)
}
