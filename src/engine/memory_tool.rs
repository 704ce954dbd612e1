//! Claude's memory tool (`memory_20250818`) served by a store (spec/memory-tool.md):
//! one command's JSON in, the reply text out, as the MCP `memory` tool, `memdir
//! memory-tool` and a library caller all see it.
//!
//! `/memories/<key>.md` is memory `<key>`; what the tool reads and writes of it is
//! its body, with the edges the tool wrote kept in the frontmatter (`tool_text`), so
//! a view shows exactly the text written. Every change goes through the engine's
//! write path under the lock (validation, secrets refused, identical text a no-op,
//! MEMORY.md rebuilt): an edit reads, changes and writes while holding the lock, so
//! two processes editing one memory lose nothing. `delete` is a `forget`, `rename`
//! a `rename`. It must not print, and it reaches files only through the store.

use serde::Serialize;
use serde_json::Value;

use super::{Draft, IfExists, IndexOwner, Memory};
use crate::error::{Error, Result};
use crate::exchange::memory_tool::{self as tool, Command, EDGES_KEY, Edges, Place, Refusal};
use crate::memory::frontmatter::{self, Parsed};
use crate::memory::layout::{INDEX_FILE, MAX_MEMORY_FILE};
use crate::memory::{Key, Kind};
use crate::store::Entry;

/// The reply to one memory-tool command: the text the model reads, and whether it
/// is an error (the tool result's `is_error`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolReply {
    /// The text the model reads.
    pub text: String,
    /// Whether the command failed.
    pub is_error: bool,
}

/// Why a command failed: a refusal with the tool's own text, or memdir's error
/// (a secret, a malformed file, the disk), shown by its message.
enum Failed {
    Refused(Refusal),
    Memdir(Error),
}

impl From<Refusal> for Failed {
    fn from(r: Refusal) -> Failed {
        Failed::Refused(r)
    }
}

impl From<Error> for Failed {
    fn from(e: Error) -> Failed {
        Failed::Memdir(e)
    }
}

type Step<T> = std::result::Result<T, Failed>;

/// What a name directly in the directory holds, as the tool sees it.
enum Held {
    /// `MEMORY.md`.
    Index,
    /// A memory file (a regular `*.md` file), by name.
    Memory(String),
    /// A memory name that is a symbolic link (never followed).
    Link,
    /// Nothing the tool shows: no such name, a folder, a dot entry, another file.
    Nothing,
}

/// The key of a memory file name that memdir may write (`user_role.md`), if any.
fn key_of(name: &str) -> Option<Key> {
    let stem = name.strip_suffix(".md")?;
    Key::parse(stem).ok().filter(|k| k.as_str() == stem)
}

impl Memory {
    /// Runs one memory-tool command given as the JSON the model sends
    /// (`{"command": "view", "path": "/memories"}`) and returns the reply: the
    /// reference implementation's text, or an error reply (`is_error`) that changed
    /// nothing (spec/memory-tool.md).
    ///
    /// ```
    /// use memdir::Memory;
    /// let mem = Memory::in_memory();
    /// let cmd = serde_json::json!({"command": "create", "path": "/memories/user_coffee.md",
    ///                              "file_text": "Likes coffee black.\n"});
    /// assert_eq!(mem.memory_tool(&cmd).text, "File created successfully at: /memories/user_coffee.md");
    /// let view = serde_json::json!({"command": "view", "path": "/memories/user_coffee.md"});
    /// assert_eq!(
    ///     mem.memory_tool(&view).text,
    ///     "Here's the content of /memories/user_coffee.md with line numbers:\n     1\tLikes coffee black.\n     2\t"
    /// );
    /// ```
    pub fn memory_tool(&self, command: &Value) -> ToolReply {
        let out = Command::parse(command)
            .map_err(Failed::from)
            .and_then(|c| self.run_tool(&c));
        match out {
            Ok(text) => ToolReply {
                text,
                is_error: false,
            },
            Err(Failed::Refused(r)) => ToolReply {
                text: r.to_string(),
                is_error: true,
            },
            Err(Failed::Memdir(e)) => ToolReply {
                text: e.to_string(),
                is_error: true,
            },
        }
    }

    /// [`Memory::memory_tool`] on the command's JSON text; text that is not JSON is
    /// an error reply.
    pub fn memory_tool_json(&self, json: &str) -> ToolReply {
        match serde_json::from_str::<Value>(json) {
            Ok(v) => self.memory_tool(&v),
            Err(e) => ToolReply {
                text: Refusal::Command {
                    detail: format!("not JSON: {e}"),
                }
                .to_string(),
                is_error: true,
            },
        }
    }

    fn run_tool(&self, c: &Command) -> Step<String> {
        match c {
            Command::View { path, view_range } => self.tool_view(path, *view_range),
            Command::Create { path, file_text } => self.tool_create(path, file_text),
            Command::StrReplace {
                path,
                old_str,
                new_str,
            } => self.tool_edit(path, "new_str", new_str, |text| {
                tool::str_replace(path, text, old_str, new_str)
            }),
            Command::Insert {
                path,
                insert_line,
                insert_text,
            } => self.tool_edit(path, "insert_text", insert_text, |text| {
                let new = tool::insert(text, *insert_line, insert_text)?;
                Ok((new, tool::edited(path)))
            }),
            Command::Delete { path } => self.tool_delete(path),
            Command::Rename { old_path, new_path } => self.tool_rename(old_path, new_path),
        }
    }

    /// What the name `name` directly in the directory holds for the tool.
    fn held(&self, name: &str) -> Result<Held> {
        if name == INDEX_FILE {
            return Ok(if self.backend.is_file(INDEX_FILE) {
                Held::Index
            } else {
                Held::Nothing
            });
        }
        if !crate::store::is_memory_name(name) {
            return Ok(Held::Nothing);
        }
        let entry = self.backend.entry(name).map_err(|source| Error::Io {
            path: self.backend.display_path(name),
            source,
        })?;
        Ok(match entry {
            Some(Entry::File) => Held::Memory(name.to_string()),
            Some(Entry::Symlink) => Held::Link,
            Some(Entry::Other) | None => Held::Nothing,
        })
    }

    /// The text the tool sees of a memory file: the body between the edges the tool
    /// wrote (or the usual ones), or the whole file when it does not parse.
    fn tool_text(&self, name: &str) -> Result<Option<String>> {
        let Some(text) = self.backend.read_text(name, MAX_MEMORY_FILE)? else {
            return Ok(None);
        };
        Ok(Some(match frontmatter::parse_read(&text) {
            Ok(p) => Edges::read(p.meta.extra.get(EDGES_KEY), &p.body).join(&p.body),
            Err(_) => text,
        }))
    }

    fn tool_view(&self, path: &str, range: Option<(i64, i64)>) -> Step<String> {
        let missing = || Refusal::Missing { path: path.into() };
        let name = match tool::place(path)? {
            Place::Root => return Ok(tool::view_dir(path, &self.tool_listing()?)),
            Place::Nested(_) => return Err(missing().into()),
            Place::Name(n) => n,
        };
        let text = match self.held(&name)? {
            Held::Index => self.backend.read_text(INDEX_FILE, u64::MAX)?,
            Held::Memory(n) => self.tool_text(&n)?,
            Held::Link => return Err(Refusal::Symlink.into()),
            Held::Nothing => None,
        };
        let text = text.ok_or_else(missing)?;
        Ok(tool::view_file(path, &text, range)?)
    }

    /// The entries `view /memories` lists, by name: MEMORY.md and every memory
    /// file (regular `*.md` files), each with the size of the text the tool sees.
    fn tool_listing(&self) -> Result<Vec<(String, u64)>> {
        if !self.backend.exists() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        if let Some(s) = self.backend.stat(INDEX_FILE) {
            out.push((INDEX_FILE.to_string(), s.size));
        }
        for found in self.backend.scan_memories()? {
            if let crate::store::Found::File(name) = found
                && let Some(text) = self.tool_text(&name)?
            {
                out.push((name, text.len() as u64));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The refusal of a change to MEMORY.md: memdir's index, or the agent's where the
    /// agent keeps it (spec/index-format.md#agent-index).
    fn index_refusal(&self, path: &str) -> Failed {
        match self.index_owner() {
            Ok(IndexOwner::Agent) => Refusal::AgentIndex { path: path.into() }.into(),
            _ => Refusal::Index { path: path.into() }.into(),
        }
    }

    /// The memory file a path that must name an existing one points at: its name,
    /// or the reference's refusal.
    fn existing_memory(&self, path: &str) -> Step<String> {
        match tool::place(path)? {
            Place::Root => Err(Refusal::NotAFile { path: path.into() }.into()),
            Place::Nested(_) => Err(Refusal::Missing { path: path.into() }.into()),
            Place::Name(name) => match self.held(&name)? {
                Held::Index => Err(self.index_refusal(path)),
                Held::Memory(n) => Ok(n),
                Held::Link => Err(Refusal::Symlink.into()),
                Held::Nothing => Err(Refusal::Missing { path: path.into() }.into()),
            },
        }
    }

    /// The key a path that may name a new memory gives, or why it cannot.
    fn new_key(&self, path: &str, exists: impl Fn(String) -> Refusal) -> Step<Key> {
        let name = match tool::place(path)? {
            Place::Root => return Err(exists(path.into()).into()),
            Place::Nested(_) => return Err(Refusal::NotAMemory { path: path.into() }.into()),
            Place::Name(n) => n,
        };
        match self.held(&name)? {
            Held::Index => return Err(self.index_refusal(path)),
            Held::Memory(_) => return Err(exists(path.into()).into()),
            Held::Link => return Err(Refusal::Symlink.into()),
            Held::Nothing => {}
        }
        key_of(&name).ok_or_else(|| Refusal::NotAMemory { path: path.into() }.into())
    }

    fn tool_create(&self, path: &str, file_text: &str) -> Step<String> {
        let key = self.new_key(path, |path| Refusal::Exists { path })?;
        tool::check_text("file_text", file_text)?;
        let (body, edges) = Edges::split(file_text);
        let (name, description) = tool::derive_fields(&body, key.as_str());
        let kind = tool::kind_of_key(key.as_str());
        let draft = Draft {
            key: key.to_string(),
            name,
            description,
            kind: kind.into(),
            body,
            ..Draft::default()
        };
        super::check_draft(&key, &draft)?;
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        // Again under the lock: another process may have created it meanwhile.
        if self
            .backend
            .entry(&key.file_name())
            .ok()
            .flatten()
            .is_some()
        {
            return Err(Refusal::Exists { path: path.into() }.into());
        }
        let extra = [(EDGES_KEY, edges.value(&draft.body).unwrap_or(Value::Null))];
        let kind = Kind::parse_strict(kind).unwrap_or(Kind::Project);
        self.write_locked_with(&key, kind, None, &draft, &extra, &IfExists::Refuse)?;
        Ok(tool::created(path))
    }

    /// `str_replace` and `insert`: under the lock, the memory's text read, changed
    /// by `change` (new text and reply), and written back; nothing is written when
    /// `change` refuses or the write is refused.
    fn tool_edit(
        &self,
        path: &str,
        field: &'static str,
        new_text: &str,
        change: impl FnOnce(&str) -> std::result::Result<(String, String), Refusal>,
    ) -> Step<String> {
        let name = self.existing_memory(path)?;
        let key = match key_of(&name) {
            Some(k) => k,
            None => {
                return Err(Key::parse(&name[..name.len() - 3]).err().map_or_else(
                    || Failed::Refused(Refusal::NotAMemory { path: path.into() }),
                    |e| Failed::Memdir(e.into()),
                ));
            }
        };
        let _g = self.backend.lock(&self.mem_lock)?;
        let (_, p) = match self.read_parsed(&key) {
            Err(Error::NotFound { .. }) => {
                return Err(Refusal::Missing { path: path.into() }.into());
            }
            other => other?,
        };
        let edges = Edges::read(p.meta.extra.get(EDGES_KEY), &p.body);
        let (text, reply) = change(&edges.join(&p.body))?;
        tool::check_text(field, new_text)?;
        self.write_tool_text(&key, &p, &text)?;
        Ok(reply)
    }

    /// Writes `text` as the tool's text of the memory `key` whose file parsed as `p`;
    /// the caller holds the lock. A name and description memdir derived from the old
    /// text (nobody changed them since) are derived again from the new one.
    fn write_tool_text(&self, key: &Key, p: &Parsed, text: &str) -> Result<()> {
        let (body, edges) = Edges::split(text);
        let old = tool::derive_fields(&p.body, key.as_str());
        let derived =
            (p.meta.name.trim(), p.meta.description.trim()) == (old.0.as_str(), old.1.as_str());
        let (name, description) = if derived {
            tool::derive_fields(&body, key.as_str())
        } else {
            (p.meta.name.clone(), p.meta.description.clone())
        };
        let draft = Draft {
            key: key.to_string(),
            name,
            description,
            kind: p.meta.kind.clone(),
            body,
            ..Draft::default()
        };
        super::check_draft(key, &draft)?;
        let extra = [(EDGES_KEY, edges.value(&draft.body).unwrap_or(Value::Null))];
        self.write_locked_with(
            key,
            p.meta.kind.clone(),
            None,
            &draft,
            &extra,
            &IfExists::Replace,
        )?;
        Ok(())
    }

    fn tool_delete(&self, path: &str) -> Step<String> {
        let gone = || Refusal::Gone { path: path.into() };
        let name = match tool::place(path)? {
            Place::Root => return Err(Refusal::DeleteRoot.into()),
            Place::Nested(_) => return Err(gone().into()),
            Place::Name(n) => n,
        };
        match self.held(&name)? {
            Held::Index => Err(self.index_refusal(path)),
            Held::Link => Err(Refusal::Symlink.into()),
            Held::Nothing => Err(gone().into()),
            Held::Memory(n) => match self.forget(&n, Some("deleted with the memory tool")) {
                Ok(_) => Ok(tool::deleted(path)),
                Err(Error::NotFound { .. }) => Err(gone().into()),
                Err(e) => Err(e.into()),
            },
        }
    }

    fn tool_rename(&self, old_path: &str, new_path: &str) -> Step<String> {
        // The reference checks both paths, then the source, then the destination.
        let old_place = tool::place(old_path)?;
        tool::place(new_path)?;
        if old_place == Place::Root {
            return Err(Refusal::RenameRoot.into());
        }
        let new = self.new_key(new_path, |path| Refusal::Destination { path })?;
        let gone = || Refusal::Gone {
            path: old_path.into(),
        };
        let name = match old_place {
            Place::Name(n) => n,
            _ => return Err(gone().into()),
        };
        let old = match self.held(&name)? {
            Held::Memory(n) => n,
            Held::Index => return Err(self.index_refusal(old_path)),
            Held::Link => return Err(Refusal::Symlink.into()),
            Held::Nothing => return Err(gone().into()),
        };
        let stem = &old[..old.len() - 3];
        match self.rename(stem, new.as_str()) {
            Ok(_) => {}
            Err(Error::NotFound { .. }) => return Err(gone().into()),
            Err(Error::Exists { .. }) => {
                return Err(Refusal::Destination {
                    path: new_path.into(),
                }
                .into());
            }
            Err(e) => return Err(e.into()),
        }
        let mut reply = tool::renamed(old_path, new_path);
        reply.push_str(&self.dangling_after_rename(stem)?);
        Ok(reply)
    }

    /// The lines naming links to `old` that dangle now that it was renamed: empty
    /// when none does.
    fn dangling_after_rename(&self, old: &str) -> Result<String> {
        let graph = self.knowledge_graph()?.graph;
        let names: Vec<String> = graph
            .dangling
            .iter()
            .filter(|d| d.link.target == old)
            .map(|d| match d.link.line {
                Some(n) => format!("/memories/{}.md line {n}", d.from),
                None => format!("/memories/{}.md (frontmatter)", d.from),
            })
            .collect();
        if names.is_empty() {
            return Ok(String::new());
        }
        Ok(format!(
            "\nLinks to [[{old}]] now dangle in: {}. Edit them to name the new key.",
            names.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests;
