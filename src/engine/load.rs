//! Loading the store: listing the memory files, taking what the search index vouches
//! for, reading, parsing and analyzing the rest on all cores, and saving the index
//! (spec/architecture.md#search-index). It must not write a memory file or MEMORY.md.

use crate::engine::Memory;
use crate::engine::found_problem;
use crate::engine::types::{Problem, SearchIndexReport, Snapshot, finish_problems, short_io};
use crate::engine::warm;
use crate::error::Result;
use crate::memory::frontmatter::{self, Parsed};
use crate::memory::layout::MAX_MEMORY_FILE;
use crate::memory::{Key, Meta, Record, SharedStr};
use crate::retrieval::search;
use crate::store::cache::{self, Cache};
use crate::store::{self, Found};

impl Memory {
    /// Loads every memory, collecting problems instead of failing on bad files.
    ///
    /// A file the search index vouches for by its stat is not opened; the others are
    /// read and hashed on all cores, and parsed (on all cores) unless the index has
    /// the parse for that content (spec/architecture.md#search-index).
    pub fn load(&self) -> Result<Snapshot> {
        self.load_with(false).map(|(snap, _, _)| snap)
    }

    /// The memory files of the directory, with a problem for each entry that is not
    /// one memdir reads.
    pub(super) fn scan_names(&self, problems: &mut Vec<Problem>) -> Result<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        for found in self.backend.scan_memories()? {
            match found {
                Found::File(n) => names.push(n),
                other => problems.extend(found_problem(other)),
            }
        }
        Ok(names)
    }

    /// Brings the search index under `.memdir/cache/` up to date, term data included,
    /// and says what that took (spec/architecture.md#search-index). Every query does
    /// the same on its way; this is for building it ahead of time and for measuring.
    pub fn search_index(&self) -> Result<SearchIndexReport> {
        // Only the records: the texts a load with them copies (every memory's, out
        // of the mapped index) would be dropped unread.
        let (_, _, report) = self.load_records(true)?;
        Ok(report)
    }

    /// Loads like [`Memory::load`]; with `terms`, also the corpus of term statistics
    /// query-aware calls need, from the search index where it has them and computed
    /// (and saved) for the rest.
    pub(super) fn load_with(
        &self,
        terms: bool,
    ) -> Result<(Snapshot, Option<search::Corpus>, SearchIndexReport)> {
        self.load_files(terms, true)
            .map(|l| (l.snap, l.corpus, l.report))
    }

    /// [`Memory::load_with`] without the files' texts (`Snapshot::texts` empty): for
    /// a read that needs only the records.
    pub(super) fn load_records(
        &self,
        terms: bool,
    ) -> Result<(Snapshot, Option<search::Corpus>, SearchIndexReport)> {
        self.load_files(terms, false)
            .map(|l| (l.snap, l.corpus, l.report))
    }

    /// [`Memory::load_records`] with each record's content key (the SHA-256 of its
    /// file, in record order): what the contents of the store are, for the MEMORY.md
    /// check ([`Memory::refresh_index_checked`]).
    pub(super) fn load_records_keyed(
        &self,
        terms: bool,
    ) -> Result<(Snapshot, Option<search::Corpus>, Vec<String>)> {
        self.load_files(terms, false)
            .map(|l| (l.snap, l.corpus, l.keys))
    }

    /// [`Memory::load_with`], with the files' texts (`Snapshot::texts`) and what was
    /// found of each record's file (what a warm process keeps) only with `texts`.
    pub(super) fn load_files(&self, terms: bool, texts: bool) -> Result<Loaded> {
        self.require_dir()?;
        // Taken before any stat: what the index records as the time of the read.
        let checked = warm::now_ns();
        let mut snap = Snapshot::default();
        let (mut cache, listed) = self.list_with_index(terms);
        let (mut names, stats, problems) = listed?;
        snap.problems.extend(problems);
        let mut files = vouched_files(&mut cache, &names, &stats, texts);
        let to_read: Vec<usize> = (0..names.len()).filter(|&i| files[i].is_none()).collect();
        let mut report = SearchIndexReport {
            vouched: names.len() - to_read.len(),
            read: to_read.len(),
            ..SearchIndexReport::default()
        };
        let (gone, parsed) = self.read_files(
            &mut cache,
            (&names, &to_read),
            checked,
            !texts,
            &mut files,
            &mut snap.problems,
        );
        report.parsed = parsed;
        let mut kept = keep_records(&names, files, &gone, &mut snap);
        let mut vocab = cache.take_vocab();
        if terms {
            analyze(&mut kept, &snap.records, &mut vocab, &mut report);
        }
        let items = || {
            kept.iter()
                .zip(&snap.records)
                .map(|((i, f), r)| cache::Item {
                    file: &names[*i],
                    stat: f.stat,
                    checked: f.checked,
                    key: &f.key,
                    text: &f.text,
                    meta: &r.meta,
                    warnings: &f.warnings,
                    data: f.data.as_ref(),
                })
        };
        // The usual read changed nothing: found without gathering the items.
        report.bytes = if held(&cache, &vocab, &report, kept.len(), items) {
            cache.bytes()
        } else {
            cache.save(&self.backend, &vocab, &items().collect::<Vec<_>>())
        };
        report.memories = kept.len();
        report.terms = vocab.len();
        // The term data in the corpus's own form, gathered only for a corpus.
        let mut docs: Vec<search::DocData> = Vec::with_capacity(if terms { kept.len() } else { 0 });
        let mut origins = Vec::with_capacity(kept.len());
        // What a warm process keeps of each file (it loads with the texts).
        let mut infos = Vec::with_capacity(if texts { kept.len() } else { 0 });
        // What is left of each file once its data is taken, freed on a thread of
        // its own (a box, a key and a share of the map per memory).
        let mut spent = Vec::with_capacity(if texts { 0 } else { kept.len() });
        // Each record's content key, when the load is not kept (a warm one keeps
        // them in `infos`).
        let mut keys = Vec::with_capacity(if texts { 0 } else { kept.len() });
        for ((i, mut f), r) in kept.into_iter().zip(&snap.records) {
            docs.extend(terms.then(|| f.data.take().unwrap_or_default()));
            origins.push(f.origin);
            if texts {
                snap.texts.insert(r.key.to_string(), f.text.into_string());
                infos.push(warm::FileInfo {
                    name: std::mem::take(&mut names[i]),
                    stat: f.stat,
                    checked: f.checked,
                    key: f.key,
                    warnings: f.warnings,
                });
            } else {
                keys.push(std::mem::take(&mut f.key));
                spent.push(f);
            }
        }
        if !spent.is_empty() {
            store::drop_later(spent);
        }
        finish_problems(&mut snap.problems, &snap.records);
        // The term counts the index kept, less and plus what differs (counted anew
        // when it kept none).
        let corpus = terms.then(|| {
            let (corpus, counted) = cache.corpus(vocab, docs, &origins);
            report.bytes += cache.save_missing_postings(&self.backend, &corpus, &origins);
            report.counted = counted;
            corpus
        });
        Ok(Loaded {
            snap,
            corpus,
            report,
            infos,
            keys,
        })
    }
}

/// What [`Memory::load_files`] found.
pub(super) struct Loaded {
    pub snap: Snapshot,
    /// The term statistics, with `terms`.
    pub corpus: Option<search::Corpus>,
    pub report: SearchIndexReport,
    /// What was found of each record's file (what a warm process keeps), with `texts`.
    pub infos: Vec<warm::FileInfo>,
    /// Each record's content key, in record order, without `texts`.
    pub keys: Vec<String>,
}

/// Whether a save of the `kept` files of a load would write nothing
/// ([`Cache::holds`] of `items`): when the index vouched for every file kept and
/// none was analyzed, without looking each up again (each is then the entry loaded
/// under its name).
fn held<'a, I: IntoIterator<Item = cache::Item<'a>>>(
    cache: &Cache,
    vocab: &search::Vocab,
    report: &SearchIndexReport,
    kept: usize,
    items: impl Fn() -> I,
) -> bool {
    let all_vouched = report.read == 0 && report.analyzed == 0 && kept == report.vouched;
    if !all_vouched {
        return cache.holds(vocab, items());
    }
    let held = cache.holds_vouched(vocab, kept);
    debug_assert_eq!(held, cache.holds(vocab, items()));
    held
}

/// Files a load reads, parses or analyzes on all cores from (fewer run on the
/// calling thread: spawning costs more than it saves).
pub(super) const PARALLEL_FROM: usize = 256;

/// One memory file during a load.
struct LoadedFile {
    stat: Option<store::Stat>,
    checked: i64,
    key: String,
    /// The whole text (read in place from a mapped index, or read from the file).
    text: SharedStr,
    parsed: std::result::Result<Parse, frontmatter::FrontmatterError>,
    /// The parse's warnings, once the parse has become a record.
    warnings: Vec<frontmatter::Warning>,
    data: Option<search::DocData>,
    /// Where in the index `data` comes from, when the index's counts hold it.
    origin: Option<usize>,
}

/// A file's parse with its body: a slice of the file's text in place where it can
/// be (a one-shot read of records from a mapped index), else a text of its own.
struct Parse {
    meta: Meta,
    body: SharedStr,
    warnings: Vec<frontmatter::Warning>,
}

impl From<Parsed> for Parse {
    fn from(p: Parsed) -> Parse {
        Parse {
            meta: p.meta,
            body: p.body.into(),
            warnings: p.warnings,
        }
    }
}

/// The memory files of a listing, their stats, and the problems the listing met.
type Listing = (Vec<String>, Vec<Option<store::Stat>>, Vec<Problem>);

/// A file read for a load: its content key, its text and its stat (`None` when it
/// was removed between the scan and the read).
type Read = Result<Option<(String, String, Option<store::Stat>)>>;

/// The steps of [`Memory::load_files`].
impl Memory {
    /// The search index, read and decoded while the directory is listed and stat'ed.
    fn list_with_index(&self, terms: bool) -> (Cache, Result<Listing>) {
        std::thread::scope(|scope| {
            let cache = scope.spawn(|| Cache::load(&self.backend, terms));
            let mut problems = Vec::new();
            let listed = self.scan_names(&mut problems).map(|names| {
                let stats: Vec<Option<store::Stat>> = self.backend.stats(&names);
                (names, stats, problems)
            });
            let cache = cache
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            (cache, listed)
        })
    }

    /// Reads the files `to_read` (indexes into `names`) on all cores into `files`:
    /// from the index when it has the parse of that content, else parsed on all
    /// cores. With `in_place` (a one-shot read of records) a body is a slice of its
    /// file's text where it can be, not a copy. Returns which files are gone
    /// (removed since the scan, or unreadable, with a problem) and how many were
    /// parsed.
    fn read_files(
        &self,
        cache: &mut Cache,
        (names, to_read): (&[String], &[usize]),
        checked: i64,
        in_place: bool,
        files: &mut [Option<Box<LoadedFile>>],
        problems: &mut Vec<Problem>,
    ) -> (Vec<bool>, usize) {
        let read: Vec<Read> = store::par_map(to_read, PARALLEL_FROM, |&i| {
            Ok(self
                .backend
                .read_text_stat(&names[i], MAX_MEMORY_FILE)?
                .map(|(t, st)| (cache::content_key(t.as_bytes()), t, st)))
        });
        // Index lookups by content are serial (cheap); the parses of what missed run
        // in parallel.
        let mut misses: Vec<(usize, String, String, Option<store::Stat>)> = Vec::new();
        let mut gone: Vec<bool> = vec![false; names.len()];
        for (&i, r) in to_read.iter().zip(read) {
            match r {
                Ok(Some((key, text, st))) => match cache.by_content(&names[i], &key) {
                    Some(hit) => {
                        let (text, body) =
                            match in_place.then(|| frontmatter::body_span(&text)).flatten() {
                                Some(span) => {
                                    let (text, body) = body_in_place(text, span);
                                    (text, Ok(body))
                                }
                                None => {
                                    let body = frontmatter::body_of(&text).map(SharedStr::from);
                                    (text.into(), body)
                                }
                            };
                        files[i] = Some(Box::new(LoadedFile {
                            stat: st,
                            checked,
                            parsed: body.map(|body| Parse {
                                meta: hit.meta,
                                body,
                                warnings: hit.warnings,
                            }),
                            key,
                            text,
                            warnings: Vec::new(),
                            data: hit.data,
                            origin: hit.origin,
                        }));
                    }
                    None => misses.push((i, key, text, st)),
                },
                Ok(None) => gone[i] = true, // removed between the scan and the read
                Err(e) => {
                    gone[i] = true;
                    problems.push(Problem::error(&names[i], None, short_io(&e)));
                }
            }
        }
        let parsed_count = misses.len();
        // The body is left out of the parse where it will be a slice of the text.
        type Parsing =
            std::result::Result<(Parsed, Option<(usize, usize)>), frontmatter::FrontmatterError>;
        let parsed: Vec<Parsing> = store::par_map(&misses, PARALLEL_FROM, |(_, _, text, _)| {
            match in_place.then(|| frontmatter::body_span(text)).flatten() {
                Some(span) => frontmatter::parse_read_meta(text).map(|p| (p, Some(span))),
                None => frontmatter::parse_read(text).map(|p| (p, None)),
            }
        });
        for ((i, key, text, st), parsed) in misses.into_iter().zip(parsed) {
            let (text, parsed) = match parsed {
                Ok((p, Some(span))) => {
                    let (text, body) = body_in_place(text, span);
                    let parse = Parse {
                        meta: p.meta,
                        body,
                        warnings: p.warnings,
                    };
                    (text, Ok(parse))
                }
                Ok((p, None)) => (text.into(), Ok(Parse::from(p))),
                Err(e) => (text.into(), Err(e)),
            };
            files[i] = Some(Box::new(LoadedFile {
                stat: st,
                checked,
                key,
                text,
                parsed,
                warnings: Vec::new(),
                data: None,
                origin: None,
            }));
        }
        (gone, parsed_count)
    }
}

/// A file's text, shared, and its body `text[start..end]` read in place from it.
fn body_in_place(text: String, (start, end): (usize, usize)) -> (SharedStr, SharedStr) {
    let text = SharedStr::shared(text);
    let body = text.slice(start..end);
    (text, body)
}

/// What the index vouches for by stat (taken from the index in order, then turned
/// into files on all cores); `None` for each file to read.
fn vouched_files(
    cache: &mut Cache,
    names: &[String],
    stats: &[Option<store::Stat>],
    texts: bool,
) -> Vec<Option<Box<LoadedFile>>> {
    let vouched: Vec<Option<(store::Stat, cache::Vouched)>> = names
        .iter()
        .zip(stats)
        .map(|(n, st)| {
            let st = (*st)?;
            Some((st, cache.by_stat(n, &st)?))
        })
        .collect();
    store::par_map_owned(vouched, PARALLEL_FROM, |vouched| {
        let (st, vouched) = vouched?;
        vouched_file(st, vouched.hit()?, texts)
    })
}

/// One file the index vouches for, with its parse from the index. Without `texts`
/// the body is a slice of the text, read in place where the text is (a one-shot
/// read keeps no copy of any text); with `texts` (a load kept for long, or handed
/// out) it is a text of its own, so that no record keeps a map.
fn vouched_file(st: store::Stat, hit: cache::Hit, texts: bool) -> Option<Box<LoadedFile>> {
    let body = match hit.body.filter(|_| !texts) {
        Some((start, end)) => Ok(hit.text.slice(start..end)),
        None => frontmatter::body_of(&hit.text).map(SharedStr::from),
    };
    Some(Box::new(LoadedFile {
        stat: Some(st),
        checked: hit.checked,
        key: hit.key,
        parsed: body.map(|body| Parse {
            meta: hit.meta,
            body,
            warnings: hit.warnings,
        }),
        text: hit.text,
        warnings: Vec::new(),
        data: hit.data,
        origin: hit.origin,
    }))
}

/// The records of the files that parsed, into `snap` in file order, each kept
/// with its file; a problem for each file that did not parse.
fn keep_records(
    names: &[String],
    files: Vec<Option<Box<LoadedFile>>>,
    gone: &[bool],
    snap: &mut Snapshot,
) -> Vec<(usize, Box<LoadedFile>)> {
    let mut kept: Vec<(usize, Box<LoadedFile>)> = Vec::with_capacity(names.len());
    snap.records.reserve(names.len());
    for (i, f) in files.into_iter().enumerate() {
        if gone[i] {
            continue;
        }
        let Some(mut f) = f else { continue };
        match std::mem::replace(&mut f.parsed, Err(frontmatter::FrontmatterError::Missing)) {
            Ok(p) => {
                let name = &names[i];
                let key = Key::from_file_stem(&name[..name.len() - 3]);
                warm::push_problems(name, &p.warnings, &mut snap.problems);
                f.warnings = p.warnings;
                snap.records.push(Record {
                    key,
                    meta: p.meta,
                    body: p.body,
                });
                kept.push((i, f));
            }
            Err(e) => snap.problems.push(Problem::error(
                &names[i],
                e.line(),
                format!("not loaded: {e}"),
            )),
        }
    }
    kept
}

/// Computes the term data of the kept files the index had none for.
fn analyze(
    kept: &mut [(usize, Box<LoadedFile>)],
    records: &[Record],
    vocab: &mut search::Vocab,
    report: &mut SearchIndexReport,
) {
    let todo: Vec<usize> = (0..kept.len())
        .filter(|&k| kept[k].1.data.is_none())
        .collect();
    analyze_batches(records, &todo, vocab, ANALYZE_BATCH, |k, data| {
        kept[k].1.data = Some(data);
        report.analyzed += 1;
    });
}

/// Memories analyzed per batch (see [`analyze_batches`]).
const ANALYZE_BATCH: usize = 2048;

/// The term data of `records[k]` for each `k` of `todo`, handed to `put` in that
/// order, with the ids of a one-thread analysis in that order.
///
/// In batches of `batch`, so that the terms as text of a large store are never all
/// held at once, and in a pipeline: while one batch's terms are given their ids
/// (the one step that must run memory after memory, here on this thread) and
/// turned into term data (on all cores), the next batch is tokenized (on all cores
/// too).
fn analyze_batches(
    records: &[Record],
    todo: &[usize],
    vocab: &mut search::Vocab,
    batch: usize,
    mut put: impl FnMut(usize, search::DocData),
) {
    let tokenize = |batch: &[usize]| {
        store::par_map(batch, PARALLEL_FROM, |&k| search::Analyzed::of(&records[k]))
    };
    std::thread::scope(|scope| {
        let mut batches = todo.chunks(batch.max(1));
        let mut next = batches.next().map(|b| (b, tokenize(b)));
        while let Some((batch, analyzed)) = next.take() {
            let ahead = batches
                .next()
                .map(|b| (b, scope.spawn(move || tokenize(b))));
            let ids: Vec<Vec<u32>> = analyzed.iter().map(|a| a.ids(vocab)).collect();
            let pairs: Vec<(&search::Analyzed, &[u32])> = analyzed
                .iter()
                .zip(&ids)
                .map(|(a, i)| (a, i.as_slice()))
                .collect();
            let data = store::par_map(&pairs, PARALLEL_FROM, |&(a, i)| {
                search::DocData::of_ids(a, i)
            });
            for (&k, d) in batch.iter().zip(data) {
                put(k, d);
            }
            next =
                ahead.map(|(b, h)| (b, h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))));
        }
    });
}

#[cfg(test)]
mod tests {
    use crate::engine::testing::{dir_store, draft};

    /// A memory file as memdir writes it, with `body`.
    fn write_file(dir: &std::path::Path, key: &str, body: &str) {
        std::fs::write(
            dir.join(format!("{key}.md")),
            format!(
                "---\nname: {key}\ndescription: about {key}\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\n---\n\n{body}\n"
            ),
        )
        .unwrap();
    }

    /// The term statistics a query ranks by are the index's counts of its main file
    /// less and plus what changed since: the counts of the memories loaded, counted
    /// anew, after edits, removals, copies, new files and a delta on the main file
    /// (spec/architecture.md#search-index).
    #[test]
    fn the_counts_the_index_keeps_are_the_counts_of_the_memories_loaded() {
        let (tmp, mem) = dir_store();
        let dir = tmp.path().join("m");
        mem.init().unwrap();
        let bodies = [
            "Ana: the cello lesson moved\nBen: to Tuesday",
            "knee physio twice a week",
            "[D1:1] Ana: flat white, no sugar\n[D1:2] Ben: noted\n\nrun at dawn",
            "trip to Paris in May\nwith the dog",
            "zebra crossing near the art show",
            "coffee coffee coffee\nmorning tempo run",
        ];
        for (i, b) in bodies.iter().enumerate() {
            write_file(&dir, &format!("k{i}"), b);
        }
        std::thread::sleep(std::time::Duration::from_millis(2100));
        assert_eq!(mem.search_index().unwrap().counted, 0, "nothing kept yet");
        let check = |what: &str, at_least: usize| {
            let (snap, corpus, report) = mem.load_records(true).unwrap();
            let corpus = corpus.unwrap();
            assert!(corpus.counts_hold(), "{what}: {report:?}");
            assert_eq!(corpus.len(), snap.records.len(), "{what}");
            assert!(report.counted >= at_least, "{what}: {report:?}");
        };
        check("vouched by stat", 6);
        write_file(&dir, "k1", "knee physio once a week now\nand a swim");
        check("an edit", 5);
        check("the edit in the delta", 5);
        std::fs::remove_file(dir.join("k3.md")).unwrap();
        check("a removal", 4);
        check("the removal in the delta", 4);
        // A copy, read beside its original (rewritten as it was): one entry's data
        // serves both.
        let text = std::fs::read(dir.join("k0.md")).unwrap();
        std::fs::write(dir.join("k0_copy.md"), &text).unwrap();
        std::fs::write(dir.join("k0.md"), &text).unwrap();
        write_file(&dir, "k9", "a new memory about the cello");
        check("a copy and a new file", 3);
        check("after them", 3);
    }

    /// The pipelined analysis of a load (batches tokenized ahead while the last is
    /// interned, term data built on all cores) gives the vocabulary and the term
    /// data of analyzing the memories one by one, in order: the ids are those of a
    /// one-thread pass, whatever the batch size (spec/architecture.md#search-index).
    #[test]
    fn a_pipelined_analysis_gives_the_ids_and_data_of_one_pass() {
        use crate::memory::Record;
        use crate::retrieval::search::{DocData, Vocab};
        let words = [
            "cello", "Tuesday", "physio", "knee", "Paris", "dog", "run", "coffee",
        ];
        let records: Vec<Record> = (0..700)
            .map(|i| {
                let w = |j: usize| words[(i * 7 + j * 3) % words.len()];
                let mut r = crate::memory::index::tests::rec(
                    &format!("k{i}"),
                    "user",
                    &format!("{} {i}", w(0)),
                    &format!("about {} and {}", w(1), w(2)),
                    "2026-01-01",
                );
                r.meta.tags = vec![w(3).to_lowercase()];
                r.body = format!(
                    "[D{i}:1] Ana: {} {}\nBen: term{} {}",
                    w(4),
                    w(5),
                    i % 97,
                    w(6)
                )
                .into();
                r
            })
            .collect();
        // Every other memory (a load analyzes only those without data), then all.
        for todo in [
            (0..700).step_by(2).collect::<Vec<usize>>(),
            (0..700).collect(),
        ] {
            let mut want_vocab = Vocab::default();
            let want: Vec<DocData> = todo
                .iter()
                .map(|&k| DocData::of(&records[k], &mut want_vocab))
                .collect();
            for batch in [1, 3, 64, 300, 5000] {
                let mut vocab = Vocab::default();
                let mut got = Vec::new();
                super::analyze_batches(&records, &todo, &mut vocab, batch, |k, d| got.push((k, d)));
                assert_eq!(vocab.terms(), want_vocab.terms(), "batch {batch}");
                let keys: Vec<usize> = got.iter().map(|g| g.0).collect();
                assert_eq!(keys, todo, "batch {batch}");
                let data: Vec<DocData> = got.into_iter().map(|g| g.1).collect();
                assert_eq!(data, want, "batch {batch}");
            }
        }
    }

    /// A one-shot read of records takes each body the index vouches for in place (a
    /// slice of the mapped index); a load that is kept or handed out owns its
    /// bodies, so that it keeps no map (spec/architecture.md#search-index).
    #[test]
    fn only_a_one_shot_read_keeps_bodies_in_the_mapped_index() {
        let (_tmp, mem) = dir_store();
        for k in ["alpha", "beta"] {
            mem.write(&draft(
                k,
                "user",
                &format!("{k} first line\nsecond line ünï"),
            ))
            .unwrap();
        }
        // Settled past the margin, then read once more: the index vouches for both.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        mem.search_index().unwrap();
        let (one_shot, _, report) = mem.load_records(true).unwrap();
        assert_eq!((report.vouched, report.read), (2, 0));
        let (kept, _, _) = mem.load_with(true).unwrap();
        let handed = mem.load().unwrap();
        for snap in [&one_shot, &kept, &handed] {
            let bodies: Vec<&str> = snap.records.iter().map(|r| r.body.as_str()).collect();
            assert_eq!(
                bodies,
                [
                    "alpha first line\nsecond line ünï",
                    "beta first line\nsecond line ünï"
                ]
            );
        }
        assert!(one_shot.records.iter().all(|r| r.body.is_shared()));
        assert!(kept.records.iter().all(|r| !r.body.is_shared()));
        assert!(handed.records.iter().all(|r| !r.body.is_shared()));
    }

    /// A one-shot read of files (no index yet, or content it has not seen) takes each
    /// body as a slice of the file's text where the body is one, and the same body a
    /// load that keeps its records copies: with a byte order mark, carriage returns,
    /// blank lines around it, no body, and a frontmatter never closed (loaded by
    /// neither).
    #[test]
    fn a_one_shot_read_of_files_takes_the_bodies_kept_loads_copy() {
        let (tmp, mem) = dir_store();
        mem.init().unwrap();
        let dir = tmp.path().join("m");
        let head = "---\nname: n\ndescription: d\ntype: user\n---\n";
        let files: [(&str, String); 6] = [
            ("plain", format!("{head}\nline one ünï\nline two\n")),
            ("bom", format!("\u{feff}{head}\nafter a mark\n")),
            (
                "crlf",
                format!("{head}\nfirst\nsecond\n").replace('\n', "\r\n"),
            ),
            ("blank", format!("{head}\n\n\n  indented body\n\n\n")),
            ("empty", head.to_string()),
            ("unclosed", "---\nname: n\nno fence after".to_string()),
        ];
        for (k, text) in &files {
            std::fs::write(dir.join(format!("{k}.md")), text).unwrap();
        }
        let bodies = |snap: &crate::engine::types::Snapshot| -> Vec<(String, String)> {
            snap.records
                .iter()
                .map(|r| (r.key.to_string(), r.body.to_string()))
                .collect()
        };
        for round in ["no index", "by content", "vouched"] {
            if round == "vouched" {
                std::thread::sleep(std::time::Duration::from_millis(2100));
                mem.search_index().unwrap();
            }
            let (one_shot, _, report) = mem.load_records(true).unwrap();
            let kept = mem.load().unwrap();
            assert_eq!(bodies(&one_shot), bodies(&kept), "{round}: {report:?}");
            assert_eq!(one_shot.problems.len(), kept.problems.len(), "{round}");
            let body = |k: &str| {
                one_shot
                    .records
                    .iter()
                    .find(|r| r.key.as_str() == k)
                    .unwrap()
            };
            assert_eq!(body("plain").body.as_str(), "line one ünï\nline two");
            assert_eq!(body("crlf").body.as_str(), "first\nsecond");
            assert_eq!(body("blank").body.as_str(), "  indented body");
            assert_eq!(body("empty").body.as_str(), "");
            assert!(body("plain").body.is_shared(), "{round}");
            assert!(kept.records.iter().all(|r| !r.body.is_shared()), "{round}");
            assert_eq!(
                one_shot.records.len(),
                5,
                "{round}: {:?}",
                one_shot.problems
            );
        }
    }
}
