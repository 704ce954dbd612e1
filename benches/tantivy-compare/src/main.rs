//! Standalone comparison: tantivy one-shot keyword query vs memdir's own index.
//! Usage:
//!   tantivy-compare build DIR INDEX     (env MERGE=1 additionally force-merges into one segment)
//!   tantivy-compare query INDEX "text"
use std::path::Path;
use std::time::Instant;

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Schema, Value, STORED, STRING, TEXT};
use tantivy::{doc, Index, IndexWriter, ReloadPolicy, TantivyDocument};

fn schema() -> Schema {
    let mut b = Schema::builder();
    b.add_text_field("key", STRING | STORED);
    b.add_text_field("name", TEXT);
    b.add_text_field("description", TEXT);
    b.add_text_field("body", TEXT | STORED);
    b.build()
}

/// Minimal YAML scalar unquoting for `"..."` / `'...'` values.
fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        let inner = &v[1..v.len() - 1];
        let mut out = String::with_capacity(inner.len());
        let mut it = inner.chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                match it.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(o) => out.push(o),
                    None => {}
                }
            } else {
                out.push(c);
            }
        }
        out
    } else if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        v[1..v.len() - 1].replace("''", "'")
    } else {
        v.to_string()
    }
}

/// Split `---\nfrontmatter\n---\nbody` into (name, description, body).
fn parse(text: &str) -> (String, String, String) {
    let (mut name, mut desc) = (String::new(), String::new());
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) {
        // find closing '---' line
        let mut off = 0;
        let mut end = None;
        for line in rest.split_inclusive('\n') {
            if line.trim_end() == "---" {
                end = Some((off, off + line.len()));
                break;
            }
            off += line.len();
        }
        if let Some((fm_end, body_start)) = end {
            for line in rest[..fm_end].lines() {
                if let Some(v) = line.strip_prefix("name:") {
                    name = unquote(v);
                } else if let Some(v) = line.strip_prefix("description:") {
                    desc = unquote(v);
                }
            }
            body = &rest[body_start..];
        }
    }
    (name, desc, body.trim_start_matches(['\n', '\r']).to_string())
}

fn build(dir: &Path, index_dir: &Path) -> tantivy::Result<()> {
    let t0 = Instant::now();
    let schema = schema();
    std::fs::create_dir_all(index_dir)?;
    let index = Index::create_in_dir(index_dir, schema.clone())?;
    let (key, name, description, body) = (
        schema.get_field("key")?,
        schema.get_field("name")?,
        schema.get_field("description")?,
        schema.get_field("body")?,
    );
    let mut writer: IndexWriter = index.writer(200_000_000)?;
    let mut n = 0usize;
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().map_or(false, |e| e == "md"))
        .filter(|p| p.file_name().map_or(true, |f| f != "MEMORY.md"))
        .collect();
    entries.sort();
    for p in &entries {
        let text = std::fs::read_to_string(p)?;
        let (nm, ds, bd) = parse(&text);
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        writer.add_document(doc!(key => stem, name => nm, description => ds, body => bd))?;
        n += 1;
    }
    writer.commit()?;
    let t_commit = t0.elapsed().as_secs_f64();
    writer.wait_merging_threads()?;
    let t_wait = t0.elapsed().as_secs_f64();
    let segs = index.searchable_segment_metas()?.len();
    println!("docs={n} commit_s={t_commit:.3} after_wait_merging_threads_s={t_wait:.3} segments={segs}");
    if std::env::var("MERGE").ok().as_deref() == Some("1") && segs > 1 {
        let ids = index.searchable_segment_ids()?;
        let mut w: IndexWriter = index.writer(200_000_000)?;
        w.merge(&ids).wait()?;
        w.wait_merging_threads()?;
        let segs = index.searchable_segment_metas()?.len();
        println!("forced merge: total_s={:.3} segments={segs}", t0.elapsed().as_secs_f64());
    }
    Ok(())
}

fn query(index_dir: &Path, q: &str) -> tantivy::Result<()> {
    let index = Index::open_in_dir(index_dir)?; // default MmapDirectory
    let schema = index.schema();
    let (key, name, description, body) = (
        schema.get_field("key")?,
        schema.get_field("name")?,
        schema.get_field("description")?,
        schema.get_field("body")?,
    );
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    let searcher = reader.searcher();
    let parser = QueryParser::for_index(&index, vec![name, description, body]);
    let (query, errs) = parser.parse_query_lenient(q);
    if std::env::var_os("DEBUG").is_some() {
        eprintln!("parsed: {query:?}\nerrors: {errs:?}");
    }
    let top = searcher.search(&query, &TopDocs::with_limit(10).order_by_score())?;
    let mut out = String::new();
    for (score, addr) in top {
        let d: TantivyDocument = searcher.doc(addr)?;
        let k = d.get_first(key).and_then(|v| v.as_str()).unwrap_or("");
        let b = d.get_first(body).and_then(|v| v.as_str()).unwrap_or("");
        let snip: String = b.chars().take(200).map(|c| if c == '\n' { ' ' } else { c }).collect();
        out.push_str(&format!("{score:.3}\t{k}\t{snip}\n"));
    }
    print!("{out}");
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let r = match args.get(1).map(String::as_str) {
        Some("build") if args.len() == 4 => build(Path::new(&args[2]), Path::new(&args[3])),
        Some("query") if args.len() == 4 => query(Path::new(&args[2]), &args[3]),
        _ => {
            eprintln!("usage: {0} build DIR INDEX | {0} query INDEX \"text\"", args[0]);
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
