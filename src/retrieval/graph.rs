//! The knowledge graph of a store (spec/memory-format.md#links): link resolution,
//! inverse edges, the breadth-first walk of `graph` / `related`, facts and dangling
//! links.
//!
//! Pure: built from the loaded records each time it is asked for (the edges are a
//! function of the files, so nothing is stored), never writes a memory file — an
//! incoming edge is derived, not written into its target. Resolution is exact: a key,
//! then an alias, then a name; nothing is fuzzy-matched.

use crate::memory::printable::escape_line as esc;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde::Serialize;

use crate::memory::Record;
use crate::memory::links::{self, Link};

/// Which edges a walk follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Links written in the memory.
    Out,
    /// Links written in other memories that point at it (derived).
    In,
    /// Both.
    #[default]
    Both,
}

impl Direction {
    /// `out`, `in` or `both`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "out" => Some(Direction::Out),
            "in" => Some(Direction::In),
            "both" => Some(Direction::Both),
            _ => None,
        }
    }
}

/// A resolved edge between two memories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The key of the memory whose link it is.
    pub from: String,
    /// The relation, as written.
    pub rel: String,
    /// The key of the memory it points to.
    pub to: String,
    /// The link's context, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// A link whose target is no memory's key, alias or name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dangling {
    /// The key of the memory whose link it is.
    pub from: String,
    /// The link as written.
    #[serde(flatten)]
    pub link: Link,
}

/// One step of a path from the start of a walk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The relation followed.
    pub rel: String,
    /// The memory reached.
    pub key: String,
    /// The step follows a link written in `key` towards the previous memory.
    pub incoming: bool,
}

/// A memory reached by a walk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    /// The memory's key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Steps from the start (0 for the start itself).
    pub depth: usize,
    /// The first path found from the start (breadth-first: a shortest one).
    pub path: Vec<Step>,
}

/// The result of a walk: nodes in breadth-first order and the edges among them that
/// the walk followed or could have (filtered by relation and direction).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Walk {
    /// The key the walk started from.
    pub start: String,
    /// The memories reached, breadth-first.
    pub nodes: Vec<Node>,
    /// The edges among them.
    pub edges: Vec<Edge>,
}

/// Every memory's links, resolved.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// Outgoing edges by key, in the order written.
    out: BTreeMap<String, Vec<Edge>>,
    /// Incoming edges by key.
    inc: BTreeMap<String, Vec<Edge>>,
    /// Name and description by key.
    info: HashMap<String, (String, String)>,
    /// Links whose target is no memory.
    pub dangling: Vec<Dangling>,
}

/// Target lookup: key, then alias, then name, each exact. An alias or name shared by
/// several memories resolves to the smallest key.
struct Resolver<'a> {
    keys: HashSet<&'a str>,
    aliases: HashMap<String, &'a str>,
    names: HashMap<&'a str, &'a str>,
}

impl<'a> Resolver<'a> {
    fn new(records: &'a [Record]) -> Resolver<'a> {
        let mut sorted: Vec<&Record> = records.iter().collect();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let mut r = Resolver {
            keys: HashSet::new(),
            aliases: HashMap::new(),
            names: HashMap::new(),
        };
        for rec in sorted {
            let k = rec.key.as_str();
            r.keys.insert(k);
            for a in rec.meta.aliases() {
                r.aliases.entry(a).or_insert(k);
            }
            r.names.entry(rec.meta.name.as_str()).or_insert(k);
        }
        r
    }

    fn resolve(&self, target: &str) -> Option<&'a str> {
        if let Some(k) = self.keys.get(target) {
            return Some(k);
        }
        self.aliases
            .get(target)
            .or_else(|| self.names.get(target))
            .copied()
    }
}

impl Graph {
    /// Builds the graph of a set of records.
    pub fn build(records: &[Record]) -> Graph {
        let resolver = Resolver::new(records);
        let mut g = Graph::default();
        for rec in records {
            let from = rec.key.as_str();
            g.info.insert(
                from.to_string(),
                (rec.meta.name.clone(), rec.meta.description.clone()),
            );
            // A relation to a memory counts once, however often it is written: the set
            // answers in one step what a scan of the list written so far answered in
            // as many steps as there were links (quadratic in one memory's links).
            let mut written: HashSet<(String, &str)> = HashSet::new();
            let mut list: Vec<Edge> = Vec::new();
            for link in links::links_of(&rec.meta, &rec.body) {
                match resolver.resolve(&link.target) {
                    Some(to) => {
                        #[cfg(test)]
                        work::add(1);
                        if written.insert((link.rel.clone(), to)) {
                            let e = Edge {
                                from: from.to_string(),
                                rel: link.rel,
                                to: to.to_string(),
                                context: link.context,
                            };
                            g.inc.entry(e.to.clone()).or_default().push(e.clone());
                            list.push(e);
                        }
                    }
                    None => g.dangling.push(Dangling {
                        from: from.to_string(),
                        link,
                    }),
                }
            }
            if !list.is_empty() {
                g.out.insert(from.to_string(), list);
            }
        }
        g.dangling.sort_by(|a, b| a.from.cmp(&b.from));
        g
    }

    /// Whether a memory with this key is in the graph.
    pub fn has(&self, key: &str) -> bool {
        self.info.contains_key(key)
    }

    /// Breadth-first walk from `start` up to `depth` steps, following edges of
    /// relation `rel` (any when `None`) in `dir`. Each memory is visited once.
    pub fn walk(&self, start: &str, depth: usize, rel: Option<&str>, dir: Direction) -> Walk {
        let mut nodes: Vec<Node> = Vec::new();
        let mut edges: Vec<Edge> = Vec::new();
        let mut seen_edges: HashSet<(String, String, String)> = HashSet::new();
        let mut visited: HashSet<String> = HashSet::new();
        let mut queue: VecDeque<(String, usize, Vec<Step>)> = VecDeque::new();
        if self.has(start) {
            visited.insert(start.to_string());
            queue.push_back((start.to_string(), 0, Vec::new()));
        }
        let empty = Vec::new();
        while let Some((key, d, path)) = queue.pop_front() {
            let (name, description) = self.info.get(&key).cloned().unwrap_or_default();
            nodes.push(Node {
                key: key.clone(),
                name,
                description,
                depth: d,
                path: path.clone(),
            });
            if d >= depth {
                continue;
            }
            let outs = matches!(dir, Direction::Out | Direction::Both)
                .then(|| self.out.get(&key).unwrap_or(&empty))
                .into_iter()
                .flatten()
                .map(|e| (e, false));
            let ins = matches!(dir, Direction::In | Direction::Both)
                .then(|| self.inc.get(&key).unwrap_or(&empty))
                .into_iter()
                .flatten()
                .map(|e| (e, true));
            for (e, incoming) in outs.chain(ins) {
                if rel.is_some_and(|r| r != e.rel) {
                    continue;
                }
                if seen_edges.insert((e.from.clone(), e.rel.clone(), e.to.clone())) {
                    edges.push(e.clone());
                }
                let next = if incoming { &e.from } else { &e.to };
                if visited.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(Step {
                        rel: e.rel.clone(),
                        key: next.clone(),
                        incoming,
                    });
                    queue.push_back((next.clone(), d + 1, p));
                }
            }
        }
        Walk {
            start: start.to_string(),
            nodes,
            edges,
        }
    }
}

/// The steps `Graph::build` takes, counted in tests: its cost must grow linearly
/// with the links of one memory (issue 31 item 9), checked by counting, not timing.
#[cfg(test)]
pub(crate) mod work {
    use std::cell::Cell;

    thread_local! {
        static STEPS: Cell<usize> = const { Cell::new(0) };
    }

    /// Counts `n` steps.
    pub(crate) fn add(n: usize) {
        STEPS.with(|s| s.set(s.get() + n));
    }

    /// The steps counted on this thread since the last call.
    pub(crate) fn take() -> usize {
        STEPS.with(|s| s.replace(0))
    }
}

/// A fact with its subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubjectFact {
    /// The key of the memory the fact is about.
    pub subject: String,
    /// What is said of it.
    pub predicate: String,
    /// The value.
    pub value: String,
}

/// The facts of the records, filtered by subject key and predicate, sorted by
/// subject then line.
pub(crate) fn facts(
    records: &[Record],
    subject: Option<&str>,
    predicate: Option<&str>,
) -> Vec<SubjectFact> {
    let mut sorted: Vec<&Record> = records
        .iter()
        .filter(|r| subject.is_none_or(|s| r.key.as_str() == s))
        .collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    let mut out = Vec::new();
    for r in sorted {
        for f in links::parse_body(&r.body).1 {
            if predicate.is_none_or(|p| p == f.predicate) {
                out.push(SubjectFact {
                    subject: r.key.to_string(),
                    predicate: f.predicate,
                    value: f.value,
                });
            }
        }
    }
    out
}

/// How a walk is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// One line per memory, then one per edge.
    #[default]
    Text,
    /// A Mermaid `graph LR` (node ids `n0`, `n1`, …; labels quoted).
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
}

impl Format {
    /// `text`, `mermaid` or `dot`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "text" => Some(Format::Text),
            "mermaid" => Some(Format::Mermaid),
            "dot" => Some(Format::Dot),
            _ => None,
        }
    }
}

/// A walk printed within a token budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rendered {
    /// The walk, printed.
    pub text: String,
    /// The first `shown` nodes of the walk (breadth-first, so the nearest) are in it.
    pub shown: usize,
    /// Nodes left out to stay within the budget.
    pub cut: usize,
}

impl Walk {
    /// The walk with only its first `n` nodes and the edges among them.
    pub fn truncated(&self, n: usize) -> Walk {
        let nodes: Vec<Node> = self.nodes.iter().take(n).cloned().collect();
        let keep: HashSet<&str> = nodes.iter().map(|n| n.key.as_str()).collect();
        let edges = self
            .edges
            .iter()
            .filter(|e| keep.contains(e.from.as_str()) && keep.contains(e.to.as_str()))
            .cloned()
            .collect();
        Walk {
            start: self.start.clone(),
            nodes,
            edges,
        }
    }
}

/// A path as `a -rel-> b <-rel- c`.
fn path_text(start: &str, path: &[Step]) -> String {
    let mut s = start.to_string();
    for step in path {
        if step.incoming {
            s.push_str(&format!(" <-{}- {}", step.rel, step.key));
        } else {
            s.push_str(&format!(" -{}-> {}", step.rel, step.key));
        }
    }
    s
}

/// A Mermaid label: quoted, with `"` as `#quot;` and line breaks as spaces.
fn mermaid_label(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("\"{}\"", clean.replace('"', "#quot;"))
}

/// A DOT quoted string.
fn dot_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn render_all(w: &Walk, format: Format, cut: usize) -> String {
    let mut s = String::new();
    match format {
        Format::Text => {
            for n in &w.nodes {
                // Every value on its line escaped: names, relations and contexts
                // come from files (spec/cli.md#output).
                s.push_str(&format!(
                    "{}  {}  {} — {}",
                    n.depth,
                    esc(&n.key),
                    esc(&n.name),
                    esc(&n.description)
                ));
                if !n.path.is_empty() {
                    s.push_str(&format!("  ({})", esc(&path_text(&w.start, &n.path))));
                }
                s.push('\n');
            }
            for e in &w.edges {
                s.push_str(&format!(
                    "{} -{}-> {}",
                    esc(&e.from),
                    esc(&e.rel),
                    esc(&e.to)
                ));
                if let Some(c) = &e.context {
                    s.push_str(&format!(" ({})", esc(c)));
                }
                s.push('\n');
            }
            if cut > 0 {
                s.push_str(&format!(
                    "… {cut} more memories not shown (over the token budget)\n"
                ));
            }
        }
        Format::Mermaid => {
            let id: HashMap<&str, usize> = w
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.key.as_str(), i))
                .collect();
            s.push_str("graph LR\n");
            for (i, n) in w.nodes.iter().enumerate() {
                s.push_str(&format!("  n{i}[{}]\n", mermaid_label(&n.key)));
            }
            for e in &w.edges {
                if let (Some(a), Some(b)) = (id.get(e.from.as_str()), id.get(e.to.as_str())) {
                    s.push_str(&format!("  n{a} -->|{}| n{b}\n", mermaid_label(&e.rel)));
                }
            }
            if cut > 0 {
                s.push_str(&format!(
                    "  %% {cut} more memories not shown (over the token budget)\n"
                ));
            }
        }
        Format::Dot => {
            s.push_str("digraph memdir {\n");
            for n in &w.nodes {
                s.push_str(&format!(
                    "  {} [label={}];\n",
                    dot_string(&n.key),
                    dot_string(&format!("{}\n{}", n.key, n.name))
                ));
            }
            for e in &w.edges {
                s.push_str(&format!(
                    "  {} -> {} [label={}];\n",
                    dot_string(&e.from),
                    dot_string(&e.to),
                    dot_string(&e.rel)
                ));
            }
            if cut > 0 {
                s.push_str(&format!(
                    "  // {cut} more memories not shown (over the token budget)\n"
                ));
            }
            s.push_str("}\n");
        }
    }
    s
}

/// Prints a walk in `format`, keeping the nearest memories that fit in `max_tokens`
/// (the start is always shown) and saying how many were cut.
pub fn render(w: &Walk, format: Format, max_tokens: usize) -> Rendered {
    let total = w.nodes.len();
    let fits = |n: usize| {
        let text = render_all(&w.truncated(n), format, total - n);
        (
            crate::retrieval::context::estimate_tokens(&text) <= max_tokens,
            text,
        )
    };
    let (ok, text) = fits(total);
    if ok || total <= 1 {
        return Rendered {
            text,
            shown: total,
            cut: 0,
        };
    }
    // The printed size grows with the number of nodes: the largest n that fits.
    let (mut lo, mut hi) = (1, total);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if fits(mid).0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Rendered {
        text: fits(lo).1,
        shown: lo,
        cut: total - lo,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Key;
    use crate::memory::frontmatter;

    fn rec(key: &str, extra: &str, body: &str) -> Record {
        let p = frontmatter::parse(&format!(
            "---\nname: N {key}\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n{extra}---\n\n{body}\n"
        ))
        .unwrap();
        Record {
            key: Key::parse(key).unwrap(),
            meta: p.meta,
            body: p.body.into(),
        }
    }

    fn store() -> Vec<Record> {
        vec![
            rec(
                "alice",
                "",
                "- works_at:: [[acme]]\n- knows:: [[Bobby]] (school)\nSee [[nobody]].",
            ),
            rec(
                "bob",
                "aliases: [Bobby]\n",
                "- knows:: [[carol]]\n- born:: 1990",
            ),
            rec("carol", "", "- knows:: [[N dave]]"),
            rec("dave", "", "- knows:: [[alice]]"),
            rec("acme", "ceo: \"[[carol]]\"\n", "A company."),
        ]
    }

    fn show(w: &Walk) -> Vec<String> {
        w.nodes
            .iter()
            .map(|n| {
                let p: Vec<String> = n
                    .path
                    .iter()
                    .map(|s| {
                        format!(
                            "{}{}{}",
                            if s.incoming { "<" } else { "" },
                            s.rel,
                            if s.incoming { "" } else { ">" }
                        )
                    })
                    .collect();
                format!("{}@{} {}", n.key, n.depth, p.join(","))
            })
            .collect()
    }

    #[test]
    fn resolution_and_dangling() {
        // spec/memory-format.md#links — key, alias, name; the rest dangle.
        let g = Graph::build(&store());
        let out: Vec<String> = g.out["alice"]
            .iter()
            .map(|e| format!("{}>{}", e.rel, e.to))
            .collect();
        assert_eq!(out, vec!["works_at>acme", "knows>bob"]);
        assert_eq!(g.out["carol"][0].to, "dave");
        assert_eq!(g.out["acme"][0].rel, "ceo");
        assert_eq!(g.dangling.len(), 1);
        assert_eq!(g.dangling[0].link.target, "nobody");
        assert_eq!(g.dangling[0].link.line, Some(3));
        // Incoming edges are derived.
        let inc: Vec<&str> = g.inc["carol"].iter().map(|e| e.from.as_str()).collect();
        assert_eq!(inc, vec!["bob", "acme"]);
    }

    /// A memory with `n` typed links to `n` other memories (one link repeated, and one
    /// dangling).
    fn fan(n: usize) -> Vec<Record> {
        let mut body: String = (0..n).map(|i| format!("- knows:: [[m{i}]]\n")).collect();
        body.push_str("- knows:: [[m0]]\n- knows:: [[nobody]]\n");
        let mut recs = vec![rec("hub", "", &body)];
        recs.extend((0..n).map(|i| rec(&format!("m{i}"), "", "x")));
        recs
    }

    #[test]
    fn build_is_linear_in_the_links_of_one_memory() {
        // issue 31 item 9: 40,000 links in one memory took seconds. The work is
        // counted, not timed: four times the links may cost about four times the steps.
        let steps = |n: usize| {
            let recs = fan(n);
            work::take();
            let g = Graph::build(&recs);
            // The same graph as before: every link once, the repeat dropped.
            assert_eq!(g.out["hub"].len(), n);
            assert_eq!(g.out["hub"][n - 1].to, format!("m{}", n - 1));
            assert_eq!(g.inc["m0"].len(), 1);
            assert_eq!(g.dangling.len(), 1);
            work::take()
        };
        let (small, large) = (steps(500), steps(2000));
        assert!(
            large <= 5 * small.max(1),
            "{small} steps for 500 links, {large} for 2000"
        );
    }

    #[test]
    fn walks() {
        let g = Graph::build(&store());
        let w = g.walk("alice", 1, None, Direction::Out);
        assert_eq!(
            show(&w),
            vec!["alice@0 ", "acme@1 works_at>", "bob@1 knows>"]
        );
        let w = g.walk("alice", 3, Some("knows"), Direction::Out);
        assert_eq!(
            show(&w),
            vec![
                "alice@0 ",
                "bob@1 knows>",
                "carol@2 knows>,knows>",
                "dave@3 knows>,knows>,knows>"
            ]
        );
        // A cycle is walked once (dave knows alice).
        let w = g.walk("alice", 3, Some("knows"), Direction::Both);
        assert_eq!(w.nodes.len(), 4);
        let w = g.walk("carol", 1, None, Direction::In);
        assert_eq!(show(&w), vec!["carol@0 ", "bob@1 <knows", "acme@1 <ceo"]);
        assert_eq!(w.edges.len(), 2);
        assert!(g.walk("missing", 2, None, Direction::Both).nodes.is_empty());
        assert_eq!(g.walk("alice", 0, None, Direction::Both).nodes.len(), 1);
    }

    #[test]
    fn fact_lists() {
        let s = store();
        let f = facts(&s, None, None);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (
                f[0].subject.as_str(),
                f[0].predicate.as_str(),
                f[0].value.as_str()
            ),
            ("bob", "born", "1990")
        );
        assert!(facts(&s, Some("alice"), None).is_empty());
        assert!(facts(&s, None, Some("died")).is_empty());
    }

    #[test]
    fn formats_and_budget() {
        let g = Graph::build(&store());
        let w = g.walk("alice", 3, None, Direction::Both);
        let t = render(&w, Format::Text, 10_000);
        assert_eq!(t.cut, 0);
        assert!(
            t.text.starts_with(
                "0  alice  N alice — d\n1  acme  N acme — d  (alice -works_at-> acme)\n"
            ),
            "{}",
            t.text
        );
        assert!(t.text.contains("alice -knows-> bob (school)\n"));
        let small = render(&w, Format::Text, 20);
        assert!(small.cut > 0 && small.shown >= 1, "{small:?}");
        assert!(
            small
                .text
                .ends_with("more memories not shown (over the token budget)\n")
        );
        let m = render(&w, Format::Mermaid, 10_000).text;
        assert!(m.starts_with("graph LR\n  n0[\"alice\"]\n"), "{m}");
        assert!(m.contains("  n0 -->|\"works_at\"| n1\n"), "{m}");
        let d = render(&w, Format::Dot, 10_000).text;
        assert!(
            d.starts_with("digraph memdir {\n  \"alice\" [label=\"alice\\nN alice\"];\n"),
            "{d}"
        );
        assert!(d.ends_with("}\n"));
        assert_eq!(dot_string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(mermaid_label("x\"]\n"), "\"x#quot;] \"");
    }
}
