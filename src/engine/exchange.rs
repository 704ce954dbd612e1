//! Export and import through the façade (spec/cli.md#import, spec/import-formats.md):
//! the portable blob and foreign inputs, planned in full before anything is written.
//! It must not decode or encode formats itself (that is `crate::exchange`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::engine::types::{Events, ImportReport, Severity};
use crate::engine::{Export, Memory};
use crate::error::{Error, Result};
use crate::exchange::blob::{self, Skipped};
use crate::exchange::foreign::{self, Format, Source};
use crate::exchange::merge::{self, Action, Counts, Decision, Strategy};
use crate::memory::frontmatter;
use crate::memory::index;
use crate::memory::layout::{BLOB_ORDER_FILE, MAX_EVENT, MAX_MEMORY_FILE, TIMELINE_DIR};
use crate::memory::secrets;
use crate::memory::timeline::{self, Event};
use crate::memory::{Meta, Record};

/// Where a foreign import came from, for its `imported` timeline event.
struct Origin<'a> {
    format: Format,
    name: &'a str,
}

impl Memory {
    /// The portable blob of the store (spec/cli.md#import).
    pub fn export(&self) -> Result<Export> {
        let snap = self.load()?;
        let events = self.events()?;
        let mut problems = snap.problems;
        // Each file goes out as the three.ws runtime reads it to the same values
        // (spec/cli.md#export); one memdir cannot parse goes out as it is. Files come
        // in the order of the blobs imported so far, then by key.
        let mut by_key: Vec<(String, &String)> =
            snap.texts.iter().map(|(k, t)| (k.clone(), t)).collect();
        merge::sort_for_export(&mut by_key, &self.blob_order());
        let files: Vec<(String, String)> = by_key
            .into_iter()
            .map(|(k, t)| {
                let text = match frontmatter::parse(t) {
                    Ok(p) => frontmatter::render_portable(&p.meta, &p.body),
                    Err(_) => t.clone(),
                };
                (format!("{k}.md"), text)
            })
            .collect();
        problems.extend(events.problems);
        Ok(Export {
            text: blob::encode(&index::render(&snap.records), &files, &events.events),
            problems,
        })
    }

    /// The memories as the MCP reference memory server's `memory.jsonl`
    /// (spec/import-formats.md#export).
    pub fn export_mcp_memory(&self) -> Result<Export> {
        let snap = self.load()?;
        Ok(Export {
            text: foreign::mcp_memory::encode(&snap.records),
            problems: snap.problems,
        })
    }

    /// The keys in the order of the blobs imported so far (empty when none was, or
    /// when the record cannot be read: it only orders an export).
    fn blob_order(&self) -> Vec<String> {
        self.backend
            .read_text(BLOB_ORDER_FILE, MAX_MEMORY_FILE)
            .ok()
            .flatten()
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Imports a blob: validates all of it, then writes (unless `dry_run`).
    pub fn import(&self, bytes: &[u8], strategy: Strategy, dry_run: bool) -> Result<ImportReport> {
        let incoming = blob::decode(bytes)?;
        self.import_incoming(incoming, strategy, dry_run, None)
    }

    /// Imports any supported input (spec/import-formats.md): a blob, a Claude Code
    /// memory folder, an MCP `memory.jsonl` or a basic-memory project; `format` `None`
    /// detects it. Validates all of it, then writes (unless `dry_run`); a foreign
    /// import that writes a memory also logs an `imported` event.
    pub fn import_from(
        &self,
        source: &Source,
        format: Option<Format>,
        strategy: Strategy,
        dry_run: bool,
    ) -> Result<ImportReport> {
        let format = match format {
            Some(f) => f,
            None => foreign::detect(source)?,
        };
        if format == Format::Blob {
            let Source::File { bytes, .. } = *source else {
                return Err(Error::Foreign(foreign::ForeignError::Shape {
                    format: "blob",
                    wants: "one file",
                    name: source.name().to_string(),
                }));
            };
            return self.import(bytes, strategy, dry_run);
        }
        let incoming = foreign::decode(format, source, self.now().date_naive())?;
        let origin = Origin {
            format,
            name: source.name(),
        };
        self.import_incoming(incoming, strategy, dry_run, Some(origin))
    }

    fn import_incoming(
        &self,
        mut incoming: blob::Incoming,
        strategy: Strategy,
        dry_run: bool,
        origin: Option<Origin>,
    ) -> Result<ImportReport> {
        // Secrets are refused on import as on any write.
        let skipped = refuse_secrets(&mut incoming);
        if !dry_run {
            self.backend.create()?;
        } else {
            self.require_dir()?;
        }
        let _g = self.backend.lock(&self.mem_lock)?;
        // Read and check everything before writing anything, in a dry run too, so
        // that `--dry-run` fails exactly where the real run would and a failed import
        // has changed nothing (spec/cli.md#import).
        let snap = self.load()?;
        let events = self.events()?;
        self.check_timeline_read(&events)?;
        keep_local_only(&snap.records, &mut incoming.files);
        let forgotten = merge::forgotten(&events.events);
        let plan = merge::plan(
            &snap.records,
            &forgotten,
            &merge::forgotten(&incoming.events),
            &incoming.files,
            strategy,
        );
        let mut new_events = merge::new_events(&events.events, &incoming.events);
        let counts = Counts::of(&plan, skipped.len());
        // A foreign input has no timeline of its own: the import is logged as one
        // event naming the format, the input and the keys it wrote (none when it
        // writes nothing, so importing the same input again changes nothing).
        if let Some(o) = &origin {
            new_events.extend(self.imported_event(o, &plan)?);
        }
        let by_key: HashMap<&str, &blob::IncomingFile> =
            incoming.files.iter().map(|f| (f.key.as_str(), f)).collect();
        let mut records = snap.records;
        for d in &plan {
            if matches!(d.action, Action::Added | Action::Updated) {
                let f = by_key[d.key.as_str()];
                records.retain(|r| r.key != f.key);
                records.push(Record {
                    key: f.key.clone(),
                    meta: f.parsed.meta.clone(),
                    body: f.parsed.body.clone().into(),
                });
            }
        }
        let mut index_plan = self.plan_index(&records)?;
        let present: std::collections::HashSet<String> =
            records.iter().map(|r| r.key.to_string()).collect();
        let report = ImportReport {
            format: origin.as_ref().map_or("blob", |o| o.format.as_str()),
            strategy,
            dry_run,
            counts,
            events_added: new_events.len(),
            plan,
            skipped_items: skipped,
            converted: incoming.converted.clone(),
            unresolved: incoming.unresolved.clone(),
        };
        if dry_run {
            return Ok(report);
        }
        self.save_index_backup(&mut index_plan)?;
        // Events first: a `forgot` line that lands is a tombstone the memories written
        // next cannot contradict.
        self.insert_events(&new_events)?;
        for d in &report.plan {
            if matches!(d.action, Action::Added | Action::Updated) {
                let f = by_key[d.key.as_str()];
                self.backend
                    .write_atomic(&f.key.file_name(), f.text.as_bytes())?;
            }
        }
        self.write_index_file(&index_plan)?;
        let incoming_keys: Vec<&str> = incoming.files.iter().map(|f| f.key.as_str()).collect();
        let mut order = merge::blob_order(&self.blob_order(), &incoming_keys, strategy);
        order.retain(|k| present.contains(k));
        let mut text = order.join("\n");
        text.push('\n');
        self.backend
            .write_atomic(BLOB_ORDER_FILE, text.as_bytes())?;
        Ok(report)
    }
}

/// The steps of [`Memory::import_incoming`].
impl Memory {
    /// Refuses the import when a timeline day file (or the folder) cannot be read at
    /// all: forgotten keys must all be known. A bad line is only that line.
    fn check_timeline_read(&self, events: &Events) -> Result<()> {
        let holds_events = |path: &str| {
            path == TIMELINE_DIR
                || timeline::is_day_file_name(path.rsplit('/').next().unwrap_or(path))
        };
        if let Some(p) = events
            .problems
            .iter()
            .find(|p| p.severity == Severity::Error && p.line.is_none() && holds_events(&p.path))
        {
            return Err(Error::TimelineUnreadable {
                path: self.backend.display_path(&p.path),
                message: p.message.clone(),
            });
        }
        Ok(())
    }

    /// The `imported` event of a foreign import (spec/import-formats.md): the format,
    /// the input and the keys it writes; `None` when it writes nothing, so importing
    /// the same input again changes nothing.
    fn imported_event(&self, o: &Origin<'_>, plan: &[Decision]) -> Result<Option<Event>> {
        let written: Vec<Value> = plan
            .iter()
            .filter(|d| matches!(d.action, Action::Added | Action::Updated))
            .map(|d| Value::String(d.key.clone()))
            .collect();
        if !written.is_empty() {
            let mut fields = Map::new();
            fields.insert("from".into(), Value::String(o.format.as_str().into()));
            let base = o
                .name
                .trim_end_matches(['/', '\\'])
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(o.name);
            fields.insert("source".into(), Value::String(base.to_string()));
            fields.insert("count".into(), Value::from(written.len()));
            fields.insert("keys".into(), Value::Array(written));
            let mut event = Event::new(self.now(), "imported", fields)?;
            // A very large import names its keys only while the event stays within
            // the size of one timeline line; the count is always there.
            if event.encode().len() > MAX_EVENT {
                event.fields.remove("keys");
            }
            return Ok(Some(event));
        }
        Ok(None)
    }
}

/// Leaves out of `incoming` every file and event that holds what looks like a
/// secret; returns what was skipped, those included.
fn refuse_secrets(incoming: &mut blob::Incoming) -> Vec<Skipped> {
    let mut skipped = std::mem::take(&mut incoming.skipped);
    incoming
        .files
        .retain(|f| match secrets::find_secret(&f.text) {
            Some(kind) => {
                skipped.push(Skipped {
                    item: f.key.file_name(),
                    reason: format!("contains what looks like {}", kind.describe()),
                });
                false
            }
            None => true,
        });
    incoming
        .events
        .retain(|e| match secrets::find_secret(&e.encode()) {
            Some(kind) => {
                skipped.push(Skipped {
                    item: format!("timeline event at {}", timeline::format_ts(&e.ts)),
                    reason: format!("contains what looks like {}", kind.describe()),
                });
                false
            }
            None => true,
        });
    skipped
}

/// A memory the three.ws runtime rewrote lacks the fields it cannot carry; the local
/// memory's values of those are kept (spec/cli.md#import).
fn keep_local_only(records: &[Record], files: &mut [blob::IncomingFile]) {
    let local_meta: HashMap<&str, &Meta> =
        records.iter().map(|r| (r.key.as_str(), &r.meta)).collect();
    for f in files {
        if let Some(l) = local_meta.get(f.key.as_str())
            && !merge::keep_local_only(l, &mut f.parsed.meta).is_empty()
        {
            f.text = frontmatter::render(&f.parsed.meta, &f.parsed.body);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testing::{NOW, at, draft};
    use crate::engine::{Export, Memory};
    use crate::exchange::merge::Strategy;

    // spec/cli.md#import: an exported blob imports into an empty store as the same
    // memories and events; a dry run writes nothing.
    #[test]
    fn an_export_imports_into_an_empty_store() {
        let from = Memory::in_memory().with_clock(at(NOW));
        from.write(&draft("a", "user", "alpha")).unwrap();
        from.write(&draft("b", "project", "beta")).unwrap();
        from.forget("b", None).unwrap();
        let Export {
            text: blob,
            problems,
        } = from.export().unwrap();
        assert!(problems.is_empty());

        let to = Memory::in_memory().with_clock(at(NOW));
        let dry = to.import(blob.as_bytes(), Strategy::Merge, true).unwrap();
        assert!(dry.dry_run);
        assert_eq!(dry.events_added, 1);
        assert!(to.load().unwrap().records.is_empty());

        let report = to.import(blob.as_bytes(), Strategy::Merge, false).unwrap();
        assert_eq!(report.events_added, 1);
        let r = to.read("a").unwrap();
        assert_eq!(r.body.trim_end(), "alpha");
        assert_eq!(to.load().unwrap().records.len(), 1);
        assert_eq!(to.events().unwrap().events[0].kind, "forgot");
        // Importing it again changes nothing.
        let again = to.import(blob.as_bytes(), Strategy::Merge, false).unwrap();
        assert_eq!(again.events_added, 0);
    }
}
