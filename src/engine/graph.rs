//! Links and the knowledge graph on a store (spec/cli.md#link, #graph, #facts): the
//! `link` / `unlink` writes and the read-only `graph` walk, `facts` and dangling links.
//!
//! `link` and `unlink` change one line of a memory's body through the same locked
//! write path as `write` (secrets refused, identical content a no-op, `updated` bumped,
//! MEMORY.md rebuilt); a failure writes nothing. The graph is derived from the files
//! each time: nothing is written into a link's target, and nothing is stored.

use super::{Draft, KnowledgeGraph, Loaded, Memory, Problem, Written, check_draft};
use crate::error::{Error, Result};
use crate::memory::links::{self, LinkEditError};
use crate::memory::{Key, Record, frontmatter};
use crate::retrieval::graph::{self, Direction, Graph, SubjectFact, Walk};

/// Deepest walk `graph` and `related` take.
pub const MAX_DEPTH: usize = 3;

impl Memory {
    /// Adds `- rel:: [[to]]` (with ` (context)`) to the body of `from` (spec/cli.md#link).
    /// Unchanged when the same line is there already.
    pub fn link(&self, from: &str, rel: &str, to: &str, context: Option<&str>) -> Result<Written> {
        self.change_body(from, |body| links::add_link(body, rel, to, context))
    }

    /// Removes the `- rel:: [[to]]` line from the body of `from`; an error when there
    /// is none (spec/cli.md#unlink).
    pub fn unlink(&self, from: &str, rel: &str, to: &str) -> Result<Written> {
        self.change_body(from, |body| links::remove_link(body, rel, to))
    }

    /// Rewrites a memory's body under the write lock, keeping every other field.
    fn change_body(
        &self,
        key: &str,
        change: impl FnOnce(&str) -> Result<String, LinkEditError>,
    ) -> Result<Written> {
        self.require_dir()?;
        let key = Key::parse(key)?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let (_, p) = self.read_parsed(&key)?;
        let body = change(&p.body).map_err(|source| Error::Link {
            key: key.to_string(),
            source,
        })?;
        let draft = Draft {
            key: key.to_string(),
            name: p.meta.name.clone(),
            description: p.meta.description.clone(),
            kind: p.meta.kind.clone(),
            body,
            ..Draft::default()
        };
        check_draft(&key, &draft)?;
        self.write_locked(&key, p.meta.kind.clone(), None, &draft)
    }

    /// The graph of the store's memories, and the problems met loading them.
    pub fn knowledge_graph(&self) -> Result<KnowledgeGraph> {
        let snap = self.load()?;
        Ok(KnowledgeGraph {
            graph: Graph::build(&snap.records),
            records: snap.records,
            problems: snap.problems,
        })
    }

    /// Walks the graph from `key` breadth-first, `depth` (1..=3) steps, following
    /// `rel` edges (any when `None`) in `dir` (spec/cli.md#graph).
    pub fn graph(
        &self,
        key: &str,
        depth: usize,
        rel: Option<&str>,
        dir: Direction,
    ) -> Result<Loaded<Walk>> {
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(Error::Argument {
                arg: "depth".into(),
                message: format!("must be 1 to {MAX_DEPTH}, got {depth}"),
            });
        }
        if let Some(r) = rel
            && !links::is_rel(r)
        {
            return Err(Error::Argument {
                arg: "rel".into(),
                message: format!("`{r}` is not a snake_case relation"),
            });
        }
        let KnowledgeGraph {
            graph: g, problems, ..
        } = self.knowledge_graph()?;
        if !g.has(key) {
            return Err(Error::NotFound {
                key: key.to_string(),
            });
        }
        Ok(Loaded {
            value: g.walk(key, depth, rel, dir),
            problems,
        })
    }

    /// The `- pred:: literal` facts, filtered by subject key and predicate.
    pub fn facts(
        &self,
        subject: Option<&str>,
        predicate: Option<&str>,
    ) -> Result<Loaded<Vec<SubjectFact>>> {
        let snap = self.load()?;
        Ok(Loaded {
            value: graph::facts(&snap.records, subject, predicate),
            problems: snap.problems,
        })
    }
}

/// Dangling links as `check` warnings, with the file line of each body link.
pub(super) fn dangling_problems(
    records: &[Record],
    texts: &std::collections::BTreeMap<String, String>,
) -> Vec<Problem> {
    let g = Graph::build(records);
    // Where each memory's body starts, found once per memory: finding it reads the
    // whole file, once per link it was quadratic in one memory's dangling links.
    let mut starts: std::collections::HashMap<&str, Option<usize>> =
        std::collections::HashMap::new();
    g.dangling
        .iter()
        .map(|d| {
            let path = format!("{}.md", d.from);
            let start = *starts
                .entry(d.from.as_str())
                .or_insert_with(|| texts.get(&d.from).and_then(|t| body_start(t)));
            let line = d.link.line.and_then(|l| start.map(|s| s + l));
            let written = match d.link.origin {
                links::Origin::Field => format!("`{}: \"[[{}]]\"`", d.link.rel, d.link.target),
                _ => format!("[[{}]] ({})", d.link.target, d.link.rel),
            };
            Problem::warning(
                &path,
                line,
                format!("dangling link {written}: no memory has that key, alias or name"),
            )
        })
        .collect()
}

/// The file line just before the body's first line: the body is the text after the
/// closing `---` with leading blank lines removed.
fn body_start(text: &str) -> Option<usize> {
    // Normalizing reads the whole file.
    #[cfg(test)]
    crate::retrieval::graph::work::add(text.len());
    let text = frontmatter::normalize_text(text);
    let mut lines = text.split('\n').enumerate();
    lines.next().filter(|(_, l)| l.trim_end() == "---")?;
    let (close, _) = lines.by_ref().find(|(_, l)| {
        let l = l.trim_end();
        l == "---" || l == "..."
    })?;
    let blanks = text
        .split('\n')
        .skip(close + 1)
        .take_while(|l| l.trim().is_empty())
        .count();
    Some(close + 1 + blanks)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::retrieval::graph::work;

    /// A store of one memory with `n` dangling links, as `check` loads it.
    fn dangling_store(n: usize) -> (Vec<Record>, BTreeMap<String, String>) {
        let body: String = (0..n)
            .map(|i| format!("- knows:: [[nobody{i}]]\n"))
            .collect();
        let text = format!(
            "---\nname: Hub\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\n{body}"
        );
        let p = frontmatter::parse(&text).unwrap();
        let rec = Record {
            key: Key::parse("hub").unwrap(),
            meta: p.meta,
            body: p.body.into(),
        };
        (vec![rec], BTreeMap::from([("hub".to_string(), text)]))
    }

    #[test]
    fn dangling_links_cost_linear_work() {
        // issue 31 item 9: `check` on one memory with 40,000 links took seconds.
        // Counted, not timed: four times the links may cost about four times the work.
        let work_for = |n: usize| {
            let (recs, texts) = dangling_store(n);
            work::take();
            let problems = dangling_problems(&recs, &texts);
            let w = work::take();
            assert_eq!(problems.len(), n);
            // The file line: the frontmatter's 7 lines, a blank line, then the body.
            assert_eq!(problems[n - 1].line, Some(8 + n));
            w
        };
        let (small, large) = (work_for(500), work_for(2000));
        assert!(
            large <= 5 * small.max(1),
            "{small} steps for 500 links, {large} for 2000"
        );
    }
}
