//! `memdir bench`: benchmarks on public data sets (one subcommand each).

use std::path::PathBuf;
use std::time::Instant;

use super::Out;
use memdir::Error;
use memdir::bench::hybrid::{BENCH_EMBED_TIMEOUT_MS, Embeddings, HybridRun, Timing};
use memdir::bench::locomo::{self, DEFAULT_BUDGETS, Report};
use memdir::bench::{LostSteps, longmemeval};
use memdir::report::Failure;

/// Measure memdir on a public benchmark.
#[derive(Debug, clap::Subcommand)]
pub enum Args {
    /// Evidence recall of query-aware context blocks on LoCoMo.
    Locomo(LocomoArgs),
    /// The same measure on generated user/assistant chats (no data needed).
    Chats(ChatsArgs),
    /// Evidence recall and session recall on LongMemEval's real chats.
    Longmemeval(LongmemevalArgs),
    /// Recall of memories a question shares no word with, keyword and hybrid.
    Paraphrase(ParaphraseArgs),
}

/// Write a paraphrase set into a memory directory and ask each question as `recall`:
/// is the memory that answers it among the first K hits? Keyword ranking cannot find
/// it (the question shares no term with it); with --embed-url, hybrid ranking may.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  memdir bench paraphrase --data fixtures/paraphrase/set.json --embed-url http://127.0.0.1:11434 \\
      --embed-model all-minilm --embed-dim 384")]
pub struct ParaphraseArgs {
    /// The set: {"memories": [{key, name, description, body}], "questions": [{question, evidence}]}.
    #[arg(long, value_name = "PATH")]
    pub data: PathBuf,
    /// How many hits the evidence must be among.
    #[arg(long, default_value_t = memdir::bench::paraphrase::DEFAULT_K)]
    pub k: usize,
    #[command(flatten)]
    pub embed: EmbedArgs,
}

/// The hybrid column: an OpenAI-compatible embeddings endpoint each benchmark store
/// is configured with (spec/ranking.md#hybrid-recall).
#[derive(Debug, Clone, clap::Args)]
pub struct EmbedArgs {
    /// Also score hybrid blocks with this embeddings endpoint (`/v1/embeddings` is
    /// appended as for `[embeddings] url`); every memory is embedded ahead of time.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "embed_builtin",
        group = "embedder"
    )]
    pub embed_url: Option<String>,
    /// Also score hybrid blocks with the embedding model built into this binary
    /// (`[embeddings] provider = "builtin"`; needs the `embed-builtin` feature).
    #[arg(long, group = "embedder")]
    pub embed_builtin: bool,
    /// The embedding model's name, as the endpoint knows it.
    #[arg(
        long,
        value_name = "MODEL",
        default_value = "all-MiniLM-L6-v2",
        requires = "embed_url"
    )]
    pub embed_model: String,
    /// The model's vector length.
    #[arg(long, value_name = "N", default_value_t = 384, requires = "embed_url")]
    pub embed_dim: usize,
    /// Milliseconds one embedding request may take.
    #[arg(long, value_name = "MS", default_value_t = BENCH_EMBED_TIMEOUT_MS, requires = "embed_url")]
    pub embed_timeout_ms: u64,
    /// Also compare the lines of each question's best memories with it, one by one
    /// (`[embeddings] passages = true`); each line is embedded the first time a
    /// question needs it.
    #[arg(long, requires = "embedder")]
    pub embed_passages: bool,
}

impl EmbedArgs {
    fn embeddings(&self) -> Option<Embeddings> {
        if self.embed_builtin {
            return Some(Embeddings {
                builtin: true,
                url: String::new(),
                model: memdir::BUILTIN_MODEL.into(),
                dimensions: memdir::BUILTIN_DIMENSIONS,
                timeout_ms: self.embed_timeout_ms,
                passages: self.embed_passages,
            });
        }
        self.embed_url.as_ref().map(|url| Embeddings {
            builtin: false,
            url: url.clone(),
            model: self.embed_model.clone(),
            dimensions: self.embed_dim,
            timeout_ms: self.embed_timeout_ms,
            passages: self.embed_passages,
        })
    }
}

/// Generate long user/assistant chats with facts said in passing, facts that change
/// later and facts spread over sessions, then measure them as `locomo` does.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Categories: 1 a fact said once in passing; 2 a fact that changed (the current
value, or the one before); 3 a preference asked in other words than it was said;
4 a fact spread over two or three sessions. The baseline is BM25 over single turn
lines packed to the same budget, run on the same conversations in the same run.
The data is drawn from --seed: the same seed gives the same chats everywhere.
With --embed-url (or --embed-builtin), the same blocks with hybrid relevance are
scored too.
Example:
  memdir bench chats --seed 1 --conversations 10 --budgets 512,1024,2048,4096
  memdir bench chats --seed 1 --embed-url http://127.0.0.1:11434 --embed-model all-minilm"
)]
pub struct ChatsArgs {
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How many conversations to generate.
    #[arg(long, default_value_t = 10)]
    pub conversations: usize,
    /// Token budgets to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_BUDGETS)]
    pub budgets: Vec<usize>,
    #[command(flatten)]
    pub embed: EmbedArgs,
}

/// Turn each LoCoMo conversation into a memory directory (one memory per session,
/// one timeline event per turn), ask every question as `context --query`, and report
/// the share of its evidence turns the block contains.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The data set (locomo10.json, CC BY-NC 4.0) is read from --data and never
copied; the memory directories live in temporary directories that are removed
afterwards. Categories 1-4 are the headline; category 5 (adversarial) is reported
apart. With --embed-url, every store is also configured with that endpoint (with
--embed-builtin, the model built into the binary), its
memories are embedded ahead of time, and the same blocks with hybrid relevance
are scored too. Example:
  memdir bench locomo --data ../shared/bench-data/locomo10.json --budgets 1024,4096"
)]
pub struct LocomoArgs {
    /// The LoCoMo data file (locomo10.json).
    #[arg(long, value_name = "PATH")]
    pub data: PathBuf,
    /// Token budgets to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_BUDGETS)]
    pub budgets: Vec<usize>,
    #[command(flatten)]
    pub embed: EmbedArgs,
}

/// Turn each LongMemEval question's history into a memory directory (one memory per
/// session, one line per turn), ask the question as `context --query` at each budget
/// and as `recall`, and report where its answer sessions and turns are.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The data (LongMemEval, MIT) is read from --data and never copied: JSON lines,
gzip'd or not (longmemeval_s_dev.jsonl.gz), or the upstream JSON array
(longmemeval_s_cleaned.json). Each question gets its own temporary memory directory,
dated from haystack_dates, and is asked at its question_date. Turn lines carry their
ids, [S7:3] for turn 3 of the 7th haystack session.
An answer session is inside a block when any turn line of it is; an answer turn (a
has_answer turn) when its line is. recall_any@k / recall_all@k: some / every answer
session among recall's first k; NDCG@10 with binary relevance; MRR: mean 1/rank of
the first answer session. Abstention questions (_abs) are reported apart. The
baseline is BM25 over single turn lines packed to the same budget, in the same run.
With --embed-url (or --embed-builtin), every question's store is also configured
with the embeddings and its memories embedded ahead of time, as for bench locomo:
the same blocks with hybrid relevance are scored too (the hybrid column), and
recall is asked again on the configured store (its hybrid ranking).
Example:
  memdir bench longmemeval --data ../shared/bench-data/longmemeval_s_dev.jsonl.gz --limit 20
  memdir bench longmemeval --data ../shared/bench-data/longmemeval_s_dev.jsonl.gz --limit 20 \\
      --embed-builtin"
)]
pub struct LongmemevalArgs {
    /// The data file (.jsonl.gz, .jsonl, or a JSON array).
    #[arg(long, value_name = "PATH")]
    pub data: PathBuf,
    /// Token budgets to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_BUDGETS)]
    pub budgets: Vec<usize>,
    /// Measure only the first N questions of the file.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub embed: EmbedArgs,
}

pub fn run(a: &Args, out: &mut Out) -> Result<i32, Failure> {
    match a {
        Args::Locomo(a) => run_locomo(a, out),
        Args::Chats(a) => run_chats(a, out),
        Args::Longmemeval(a) => run_longmemeval(a, out),
        Args::Paraphrase(a) => run_paraphrase(a, out),
    }
}

fn run_paraphrase(a: &ParaphraseArgs, out: &mut Out) -> Result<i32, Failure> {
    if a.k == 0 {
        return Err(Error::Usage("--k must be at least 1").into());
    }
    let start = Instant::now();
    let set = memdir::bench::paraphrase::load(&a.data)?;
    let r = memdir::bench::paraphrase::run(&set, a.k, a.embed.embeddings().as_ref())?;
    out.note(&format!(
        "bench: {} questions in {:.1} s",
        r.questions,
        start.elapsed().as_secs_f64()
    ));
    if out.is_json() {
        out.json(&r);
        return Ok(0);
    }
    let rank = |r: Option<usize>| r.map_or_else(|| "-".to_string(), |r| r.to_string());
    let mut s = format!(
        "Paraphrase recall@{}: {} memories, {} questions, each sharing no term with its evidence\n\n",
        r.k, r.memories, r.questions
    );
    for o in &r.outcomes {
        s.push_str(&format!(
            "keyword {:>2}  hybrid {:>2}  {} -> {}\n",
            rank(o.keyword_rank),
            if r.hybrid.is_some() {
                rank(o.hybrid_rank)
            } else {
                " ".to_string()
            },
            o.question,
            o.evidence
        ));
    }
    s.push_str(&format!(
        "\nkeyword recall@{}: {:.3}\n",
        r.k, r.keyword_recall
    ));
    if let (Some(h), Some(run)) = (r.hybrid_recall, &r.hybrid) {
        s.push_str(&format!(
            "hybrid recall@{}: {:.3} ({}, {} dimensions; {} questions fell back)\n",
            r.k, h, run.model, run.dimensions, run.fallbacks
        ));
    }
    out.text(&s);
    Ok(0)
}

fn run_chats(a: &ChatsArgs, out: &mut Out) -> Result<i32, Failure> {
    check_budgets(&a.budgets)?;
    if a.conversations == 0 {
        return Err(Error::Usage("--conversations must be at least 1").into());
    }
    let start = Instant::now();
    let conversations = memdir::bench::chats::generate(a.seed, a.conversations);
    let embeddings = a.embed.embeddings();
    let (report, timing) = locomo::run_with(
        "chats",
        &conversations,
        &a.budgets,
        embeddings.as_ref(),
        &mut |id| {
            out.progress_line(&format!("bench: {id} done"));
        },
    )?;
    out.note(&format!(
        "bench: {} questions × {} budgets in {:.1} s (seed {})",
        report.questions,
        a.budgets.len(),
        start.elapsed().as_secs_f64(),
        a.seed
    ));
    note_hybrid(report.hybrid.as_ref(), &timing, out);
    if out.is_json() {
        out.json(&report);
    } else {
        out.text(&table(&report, "Generated chats"));
    }
    Ok(0)
}

fn run_longmemeval(a: &LongmemevalArgs, out: &mut Out) -> Result<i32, Failure> {
    check_budgets(&a.budgets)?;
    let start = Instant::now();
    let embeddings = a.embed.embeddings();
    let mut runner = longmemeval::Runner::with_embeddings(&a.budgets, embeddings.as_ref());
    let mut done = 0;
    longmemeval::for_each(&a.data, a.limit, &mut |q| {
        runner.add(&q)?;
        done += 1;
        out.progress_line(&format!("bench: {} done ({done})", q.id));
        Ok(())
    })?;
    let (report, timing) = runner.finish_timed();
    out.note(&format!(
        "bench: {} questions × {} budgets in {:.1} s",
        report.questions + report.abstention_questions,
        a.budgets.len(),
        start.elapsed().as_secs_f64()
    ));
    note_hybrid(report.hybrid.as_ref(), &timing, out);
    if out.is_json() {
        out.json(&report);
    } else {
        out.text(&lme_table(&report));
    }
    Ok(0)
}

/// The LongMemEval report as tables.
fn lme_table(r: &longmemeval::Report) -> String {
    let mut s = lme_header(r);
    s.push_str(&lme_budgets(r));
    s.push_str(&lme_types(r));
    s.push_str(&lme_recall(r));
    s.push_str(&steps_line(
        &r.lost_steps,
        "answerable questions, answer turns",
    ));
    s.push_str(
        "\nsessions: mean share of a question's answer sessions with at least one turn line in\n\
         the block (MEMORY.md's session list does not count); turns: mean share of its\n\
         has_answer turns whose line is in the block; tokens: mean estimated tokens;\n\
         abstention questions are scored on the sessions and turns the data marks anyway\n",
    );
    if r.hybrid.is_some() {
        s.push_str(
            "hybrid: the same blocks with hybrid memory relevance (the line scores stay the \
             keyword ones)\n",
        );
    }
    s
}

/// What was measured, and what was left out and why.
fn lme_header(r: &longmemeval::Report) -> String {
    let mut s = format!(
        "LongMemEval evidence recall: {} answerable questions ({} abstention apart), \
         {} sessions, {} turns\ncontext --query QUESTION --max-tokens BUDGET at question_date, \
         MEMORY.md included;\nbaseline: BM25 over single turn lines, packed to the same budget\n\n",
        r.questions, r.abstention_questions, r.sessions, r.turns
    );
    if r.unknown_answer_sessions > 0 || r.questions_without_answer_turns > 0 {
        s.push_str(&format!(
            "({} answer session ids name no haystack session; {} answerable questions \
             have no answer turn and are left out of turn recall)\n\n",
            r.unknown_answer_sessions, r.questions_without_answer_turns
        ));
    }
    if r.refused_sessions > 0 {
        s.push_str(&format!(
            "({} sessions look like they hold a credential: memdir refuses to store them, \
             so both sides leave them out; {} of them answer sessions)\n\n",
            r.refused_sessions, r.refused_answer_sessions
        ));
    }
    if let Some(h) = &r.hybrid {
        s.push_str(&format!(
            "hybrid: the same blocks with keyword and vector ranks fused, and recall on the \
             store configured with the embeddings ({}, {} dimensions; {} memories embedded, \
             {} questions fell back)\n\n",
            h.model, h.dimensions, h.passages, h.fallbacks
        ));
    }
    s
}

/// Answer sessions, turns and tokens per budget, answerable questions.
fn lme_budgets(r: &longmemeval::Report) -> String {
    let hybrid = r.hybrid.is_some();
    let mut s = String::new();
    s.push_str(if hybrid {
        "budget  sessions  hybrid  (base)  turns  hybrid  (base)  tokens  hybrid  (base)\n"
    } else {
        "budget  sessions  (base)  turns  (base)  tokens  (base)\n"
    });
    for b in &r.budgets {
        let (m, x) = (&b.answerable.memdir, &b.answerable.baseline);
        // With the hybrid column, its value stands between memdir's and the baseline's.
        let h = |pick: fn(&longmemeval::BlockScore) -> String| {
            b.answerable
                .hybrid
                .as_ref()
                .map_or(String::new(), |h| format!("  {:>6}", pick(h)))
        };
        s.push_str(&format!(
            "{:>6}  {:>8.3}{}  {:>6.3}  {:>5.3}{}  {:>6.3}  {:>6.0}{}  {:>6.0}\n",
            b.max_tokens,
            m.answer_sessions,
            h(|h| format!("{:.3}", h.answer_sessions)),
            x.answer_sessions,
            m.answer_turns,
            h(|h| format!("{:.3}", h.answer_turns)),
            x.answer_turns,
            m.mean_tokens,
            h(|h| format!("{:.0}", h.mean_tokens)),
            x.mean_tokens
        ));
    }
    s
}

/// Answer sessions and answer turns in the block per question type, abstention apart.
fn lme_types(r: &longmemeval::Report) -> String {
    let mut s = String::new();
    let types: Vec<&String> = r
        .budgets
        .first()
        .map(|b| b.types.keys().collect())
        .unwrap_or_default();
    for (title, pick) in [
        (
            "answer sessions in the block",
            (|s: &longmemeval::BlockScore| s.answer_sessions)
                as fn(&longmemeval::BlockScore) -> f64,
        ),
        ("answer turns in the block", |s| s.answer_turns),
    ] {
        let (which, width) = if r.hybrid.is_some() {
            ("memdir (hybrid, baseline)", 22)
        } else {
            ("memdir (baseline)", 15)
        };
        s.push_str(&format!("\n{title}, per question type: {which}\n"));
        s.push_str(&format!("{:<26} {:>4}", "type", "n"));
        for b in &r.budgets {
            s.push_str(&format!("  {:>width$}", b.max_tokens));
        }
        s.push('\n');
        let cell = |p: &longmemeval::Pair| match &p.hybrid {
            Some(h) => format!(
                "  {:>6.3} ({:.3}, {:.3})",
                pick(&p.memdir),
                pick(h),
                pick(&p.baseline)
            ),
            None => format!("  {:>6.3} ({:.3})", pick(&p.memdir), pick(&p.baseline)),
        };
        for t in &types {
            let n = r.budgets[0].types[*t].memdir.questions;
            s.push_str(&format!("{t:<26} {n:>4}"));
            for b in &r.budgets {
                s.push_str(&cell(&b.types[*t]));
            }
            s.push('\n');
        }
        if r.abstention_questions > 0 {
            s.push_str(&format!(
                "{:<26} {:>4}",
                "abstention (apart)", r.abstention_questions
            ));
            for b in &r.budgets {
                s.push_str(&cell(&b.abstention));
            }
            s.push('\n');
        }
    }
    s
}

/// Recall's ranking of the sessions, all answerable questions and per type.
fn lme_recall(r: &longmemeval::Report) -> String {
    let mut s = String::new();
    s.push_str(
        "\nrecall QUESTION, its ranking of the sessions (answerable questions)\n\
         type                          n  any@5  all@5  any@10  NDCG@10    MRR\n",
    );
    let row = |name: &str, x: &longmemeval::RankScore| {
        format!(
            "{name:<26} {:>4}  {:.3}  {:.3}  {:>6.3}  {:>7.3}  {:.3}\n",
            x.questions,
            x.recall_any_at_5,
            x.recall_all_at_5,
            x.recall_any_at_10,
            x.ndcg_at_10,
            x.mrr
        )
    };
    s.push_str(&row("all", &r.recall));
    for (t, x) in &r.recall_types {
        s.push_str(&row(t, x));
    }
    if let (Some(all), Some(types)) = (&r.hybrid_recall, &r.hybrid_recall_types) {
        s.push_str(
            "\nrecall QUESTION on the store configured with the embeddings (hybrid ranking)\n\
             type                          n  any@5  all@5  any@10  NDCG@10    MRR\n",
        );
        s.push_str(&row("all", all));
        for (t, x) in types {
            s.push_str(&row(t, x));
        }
    }
    s
}

fn check_budgets(budgets: &[usize]) -> Result<(), Failure> {
    if budgets.is_empty() || budgets.contains(&0) {
        return Err(Error::Usage("--budgets must be positive token counts, e.g. 512,1024").into());
    }
    Ok(())
}

fn run_locomo(a: &LocomoArgs, out: &mut Out) -> Result<i32, Failure> {
    check_budgets(&a.budgets)?;
    let start = Instant::now();
    let conversations = locomo::load(&a.data)?;
    let total = conversations.len();
    let mut done = 0;
    let embeddings = a.embed.embeddings();
    let (report, timing) = locomo::run_with(
        "locomo",
        &conversations,
        &a.budgets,
        embeddings.as_ref(),
        &mut |id| {
            done += 1;
            out.progress_line(&format!("bench: {id} done ({done}/{total})"));
        },
    )?;
    out.note(&format!(
        "bench: {} questions × {} budgets in {:.1} s",
        report.questions,
        a.budgets.len(),
        start.elapsed().as_secs_f64()
    ));
    note_hybrid(report.hybrid.as_ref(), &timing, out);
    if out.is_json() {
        out.json(&report);
    } else {
        out.text(&table(&report, "LoCoMo"));
    }
    Ok(0)
}

/// The embedding throughput on stderr, and a warning when hybrid blocks fell back.
fn note_hybrid(h: Option<&HybridRun>, t: &Timing, out: &mut Out) {
    let Some(h) = h else { return };
    let rate = |n: usize, secs: f64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let (ps, qs) = (t.passage_time.as_secs_f64(), t.query_time.as_secs_f64());
    let mut line = format!(
        "bench: embedded {} memories in {:.1} s ({:.2}/s) and {} questions in {:.1} s ({:.2}/s)",
        t.passages,
        ps,
        rate(t.passages, ps),
        t.queries,
        qs,
        rate(t.queries, qs)
    );
    if t.recalls > 0 {
        let rs = t.recall_time.as_secs_f64();
        line.push_str(&format!(
            "; hybrid recall of {} questions in {:.1} s ({:.2}/s)",
            t.recalls,
            rs,
            rate(t.recalls, rs)
        ));
    }
    out.note(&line);
    if h.fallbacks > 0 {
        out.warn(&format!(
            "warning: {} questions fell back to keyword ranking in the hybrid column",
            h.fallbacks
        ));
    }
}

/// The report as tables: one row per budget, memdir beside the baseline.
fn table(r: &Report, title: &str) -> String {
    let mut s = format!(
        "{title} evidence recall: {} conversations, {} sessions, {} turns, {} questions \
         ({} without evidence left out)\ncontext --query QUESTION --max-tokens BUDGET, MEMORY.md included;\n\
         baseline: BM25 over single turn lines, packed to the same budget\n\n",
        r.conversations, r.sessions, r.turns, r.questions, r.questions_without_evidence
    );
    let cats: Vec<u8> = r
        .budgets
        .first()
        .map(|b| {
            b.categories
                .keys()
                .copied()
                .filter(|c| *c != locomo::ADVERSARIAL)
                .collect()
        })
        .unwrap_or_default();
    let adversarial = r
        .budgets
        .first()
        .is_some_and(|b| b.categories.contains_key(&locomo::ADVERSARIAL));
    if let Some(h) = &r.hybrid {
        s.push_str(&format!(
            "hybrid: the same blocks with keyword and vector ranks fused ({}, {} dimensions; \
             {} memories embedded, {} questions fell back)\n\n",
            h.model, h.dimensions, h.passages, h.fallbacks
        ));
    }
    let hybrid = r.hybrid.is_some();
    s.push_str("budget  recall 1-4  ");
    if hybrid {
        s.push_str("hybrid 1-4  ");
    }
    s.push_str("baseline 1-4  all-evidence  tokens  index");
    for c in &cats {
        if hybrid {
            s.push_str(&format!("  cat {c} (hybrid, base)"));
        } else {
            s.push_str(&format!("  cat {c} (base)"));
        }
    }
    if adversarial {
        s.push_str("  cat 5 (adversarial)");
    }
    s.push('\n');
    for b in &r.budgets {
        s.push_str(&format!(
            "{:>6}  {:>10.3}  ",
            b.max_tokens, b.answerable.evidence_recall
        ));
        if let Some(h) = &b.hybrid {
            s.push_str(&format!("{:>10.3}  ", h.evidence_recall));
        }
        s.push_str(&format!(
            "{:>12.3}  {:>12.3}  {:>6.0}  {:>5.0}",
            b.baseline.evidence_recall,
            b.answerable.all_evidence,
            b.answerable.mean_tokens,
            b.index_tokens
        ));
        for c in &cats {
            let v = b.categories.get(c).map_or(0.0, |x| x.evidence_recall);
            let w = b
                .baseline_categories
                .get(c)
                .map_or(0.0, |x| x.evidence_recall);
            match &b.hybrid_categories {
                Some(hc) => {
                    let h = hc.get(c).map_or(0.0, |x| x.evidence_recall);
                    s.push_str(&format!("  {v:>5.3} ({h:.3}, {w:.3})"));
                }
                None => s.push_str(&format!("  {v:>5.3} ({w:.3})")),
            }
        }
        if adversarial {
            s.push_str(&format!("  {:>19.3}", b.adversarial.evidence_recall));
        }
        s.push('\n');
    }
    s.push_str(&steps_line(&r.lost_steps, "categories 1-4"));
    s.push_str(
        "\nrecall: mean share of a question's evidence turns in the block; all-evidence: share of\n\
         questions with every evidence turn in it; tokens: mean estimated tokens of the block;\n\
         index: of which MEMORY.md; (base): the baseline's recall in that category\n",
    );
    if hybrid {
        s.push_str(
            "hybrid: recall of the same blocks with hybrid memory relevance (the line scores \
             stay the keyword ones)\n",
        );
    }
    s
}

/// The count of budget steps that lost evidence, with what a step is.
fn steps_line(l: &LostSteps, which: &str) -> String {
    let mut s = format!(
        "\nbudget steps that lost evidence ({which}): memdir {} of {}",
        l.memdir, l.steps
    );
    if let Some(h) = l.hybrid {
        s.push_str(&format!(", hybrid {h}"));
    }
    s.push_str(&format!(
        ", baseline {}\n(a step is one question from one budget to the next larger; it loses \
         when the larger block lacks an evidence turn the smaller held)\n",
        l.baseline
    ));
    s
}
