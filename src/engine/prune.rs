//! `prune` and `consolidate` (spec/cli.md#prune, spec/cli.md#consolidate): plans that
//! list which memories could go or be merged, and the one executor that forgets
//! exactly a prune plan.
//!
//! Nothing here runs by itself: a plan only reads, and `prune_apply` forgets exactly
//! the plan recomputed under the lock (refusing, with nothing changed, when it differs
//! from the plan the caller saw). memdir never merges memories: `consolidate` only
//! groups them for the agent, which merges with `supersedes`.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Loaded, Memory, check_event_size};
use crate::error::{Error, Result};
use crate::memory::Record;
use crate::memory::timeline::Event;
use crate::retrieval::duplicates::{self, Why};
use crate::retrieval::filter::Lifecycle;
use crate::retrieval::rank;

/// The default for `--superseded-days`.
pub const DEFAULT_SUPERSEDED_DAYS: u32 = 30;

/// What makes a memory a prune candidate (any one is enough).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PruneCriteria {
    /// Superseded for more than this many days (counted from the `updated` day of the
    /// earliest memory that supersedes it).
    pub superseded_days: u32,
    /// Rank score below this (0..=1); important memories are never below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below: Option<f64>,
    /// Keep at most this many memories: the lowest ranked beyond it are candidates
    /// (important ones are kept and count toward the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<usize>,
}

impl Default for PruneCriteria {
    fn default() -> PruneCriteria {
        PruneCriteria {
            superseded_days: DEFAULT_SUPERSEDED_DAYS,
            below: None,
            cap: None,
        }
    }
}

/// Why a memory is a prune candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum PruneReason {
    /// Its `valid_until` day has passed.
    Expired {
        /// The day it was valid until.
        valid_until: String,
    },
    /// Superseded for more than the criteria's days.
    Superseded {
        /// The keys of the memories that supersede it.
        by: Vec<String>,
        /// For how many days it has been superseded.
        days: i64,
    },
    /// Its rank score is below the threshold.
    Below {
        /// Its rank score.
        score: f64,
    },
    /// It ranks beyond the cap.
    BeyondCap {
        /// Its place in the rank order (1 is first).
        rank: usize,
    },
}

impl std::fmt::Display for PruneReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PruneReason::Expired { valid_until } => {
                write!(f, "expired after {valid_until}")
            }
            PruneReason::Superseded { by, days } => {
                write!(f, "superseded by {} for {days} days", by.join(", "))
            }
            PruneReason::Below { score } => write!(f, "score {score:.3} below the threshold"),
            PruneReason::BeyondCap { rank } => write!(f, "rank {rank} beyond the cap"),
        }
    }
}

/// One prune candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PruneCandidate {
    /// The memory's key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Its rank score.
    pub score: f64,
    /// Why it would be forgotten (every criterion it meets).
    pub reasons: Vec<PruneReason>,
}

/// A prune plan: the criteria, the day it was judged on, and the candidates by key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrunePlan {
    /// The criteria the plan was made with.
    pub criteria: PruneCriteria,
    /// The day the plan was made for.
    pub today: NaiveDate,
    /// How many memories were considered.
    pub memories: usize,
    /// The memories the plan would forget.
    pub candidates: Vec<PruneCandidate>,
}

impl PrunePlan {
    /// The keys the plan would forget, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut k: Vec<String> = self.candidates.iter().map(|c| c.key.clone()).collect();
        k.sort();
        k
    }
}

/// The plan for `records` on `now` (pure).
fn plan_of(records: &[Record], now: chrono::DateTime<chrono::Utc>, c: &PruneCriteria) -> PrunePlan {
    let today = now.date_naive();
    let life = Lifecycle::of(records, today);
    let order = rank::order(records, now);
    let mut reasons: Vec<Vec<PruneReason>> = vec![Vec::new(); records.len()];
    let mut scores = vec![0.0; records.len()];
    let by_key: std::collections::HashMap<&str, &Record> =
        records.iter().map(|r| (r.key.as_str(), r)).collect();
    for (pos, &(i, score)) in order.iter().enumerate() {
        let r = &records[i];
        scores[i] = score;
        if life.expired(r) {
            reasons[i].push(PruneReason::Expired {
                valid_until: r.meta.valid_until.clone().unwrap_or_default(),
            });
        }
        let by = life.superseded_by(r.key.as_str());
        if !by.is_empty() {
            let since = by
                .iter()
                .filter_map(|k| by_key.get(k.as_str()))
                .map(|x| x.meta.updated.date())
                .min()
                .unwrap_or(today);
            let days = (today - since).num_days();
            if days > i64::from(c.superseded_days) {
                reasons[i].push(PruneReason::Superseded {
                    by: by.to_vec(),
                    days,
                });
            }
        }
        if let Some(min) = c.below
            && !r.meta.important
            && score < min
        {
            reasons[i].push(PruneReason::Below {
                score: (score * 1000.0).round() / 1000.0,
            });
        }
        if let Some(cap) = c.cap
            && !r.meta.important
            && pos >= cap
        {
            reasons[i].push(PruneReason::BeyondCap { rank: pos + 1 });
        }
    }
    let candidates = order
        .iter()
        .filter_map(|&(i, _)| {
            let reasons = std::mem::take(&mut reasons[i]);
            // A person's `read_only: true` memory is never a candidate: only a person
            // removes it (spec/memory-format.md, `read_only`).
            (!reasons.is_empty() && !records[i].meta.read_only()).then(|| PruneCandidate {
                key: records[i].key.to_string(),
                name: records[i].meta.name.clone(),
                score: (scores[i] * 1000.0).round() / 1000.0,
                reasons,
            })
        })
        .collect();
    PrunePlan {
        criteria: c.clone(),
        today,
        memories: records.len(),
        candidates,
    }
}

/// What `prune --apply` forgot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PruneApplied {
    /// The keys forgotten.
    pub forgot: Vec<String>,
    /// The `forgot` events, in the order appended.
    #[serde(skip)]
    pub events: Vec<Event>,
}

/// A group of `consolidate --plan`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DuplicateGroup {
    /// Why the memories are grouped: exact, near or same name.
    pub why: Why,
    /// The lowest similarity of a pair in the group (1 for exact copies).
    pub similarity: f64,
    /// Keys, newest `updated` first (the first is the natural one to keep).
    pub keys: Vec<String>,
}

/// The `consolidate --plan` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsolidatePlan {
    /// The similarity a near group must reach.
    pub threshold: f64,
    /// How many memories were compared.
    pub memories: usize,
    /// The groups found.
    pub groups: Vec<DuplicateGroup>,
}

impl Memory {
    /// Lists the prune candidates under `criteria` (spec/cli.md#prune). Reads only.
    pub fn prune_plan(&self, criteria: &PruneCriteria) -> Result<Loaded<PrunePlan>> {
        check_criteria(criteria)?;
        let snap = self.load()?;
        Ok(Loaded {
            value: plan_of(&snap.records, self.now(), criteria),
            problems: snap.problems,
        })
    }

    /// Forgets exactly the prune plan under `criteria`, recomputed under the lock.
    /// With `expect` (the keys of a plan shown earlier), refuses with nothing changed
    /// when the recomputed plan forgets other keys. Each memory gets a `forgot` event
    /// with reason `prune`; MEMORY.md is rebuilt once. Every check (reading the store,
    /// the events, MEMORY.md) happens before anything is written; if rebuilding
    /// MEMORY.md fails, the memory files are put back.
    pub fn prune_apply(
        &self,
        criteria: &PruneCriteria,
        expect: Option<&[String]>,
    ) -> Result<PruneApplied> {
        check_criteria(criteria)?;
        self.require_dir()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let mut records = self.load()?.records;
        let plan = plan_of(&records, self.now(), criteria);
        let keys = plan.keys();
        if let Some(expect) = expect {
            let mut want: Vec<String> = expect.to_vec();
            want.sort();
            want.dedup();
            if want != keys {
                return Err(Error::PlanChanged {
                    added: keys.iter().filter(|k| !want.contains(k)).cloned().collect(),
                    removed: want.iter().filter(|k| !keys.contains(k)).cloned().collect(),
                });
            }
        }
        let mut befores = Vec::new();
        let mut events = Vec::new();
        for key in &keys {
            let name = format!("{key}.md");
            let Some(before) = self.backend.read(&name, u64::MAX)? else {
                return Err(Error::NotFound { key: key.clone() });
            };
            let mut fields = Map::new();
            fields.insert("key".into(), Value::String(key.clone()));
            fields.insert("reason".into(), Value::String("prune".into()));
            let event = Event::new(self.now(), "forgot", fields)?;
            let line = event.encode();
            check_event_size(&event, &line)?;
            befores.push((name, before));
            events.push((event, line));
        }
        if keys.is_empty() {
            return Ok(PruneApplied {
                forgot: Vec::new(),
                events: Vec::new(),
            });
        }
        records.retain(|r| !keys.iter().any(|k| k == r.key.as_str()));
        let mut index_plan = self.plan_index(&records)?;
        self.save_index_backup(&mut index_plan)?;
        // As in `forget`: the tombstones first (one that fails leaves every memory in
        // place; a tombstone without its deletion is harmless), then the deletions;
        // if a deletion or MEMORY.md fails, the files already removed are put back.
        for (event, line) in &events {
            self.backend.append_line(&event.day_file(), line)?;
        }
        let restore = |upto: usize| {
            for (name, before) in &befores[..upto] {
                let _ = self.backend.write_atomic(name, before);
            }
        };
        for (i, (name, _)) in befores.iter().enumerate() {
            if let Err(e) = self.backend.remove(name) {
                restore(i);
                return Err(e);
            }
        }
        if let Err(e) = self.write_index_file(&index_plan) {
            restore(befores.len());
            return Err(e);
        }
        Ok(PruneApplied {
            forgot: keys,
            events: events.into_iter().map(|(e, _)| e).collect(),
        })
    }

    /// Groups exact and near duplicates (spec/cli.md#consolidate). Reads only.
    pub fn consolidate_plan(&self, threshold: f64) -> Result<Loaded<ConsolidatePlan>> {
        if !(threshold.is_finite() && threshold > 0.0 && threshold <= 1.0) {
            return Err(Error::Argument {
                arg: "--threshold".into(),
                message: format!(
                    "{threshold} is not a similarity; expected a number above 0, at most 1"
                ),
            });
        }
        let snap = self.load()?;
        // Superseded and expired memories are already dealt with: only current ones
        // are grouped.
        let life = Lifecycle::of(&snap.records, self.now().date_naive());
        let rs: &Vec<Record> = &snap
            .records
            .iter()
            .filter(|r| life.superseded_by(r.key.as_str()).is_empty() && !life.expired(r))
            .cloned()
            .collect();
        let groups = duplicates::groups(rs, threshold)
            .into_iter()
            .map(|g| {
                let mut m = g.members;
                m.sort_by(|&a, &b| {
                    rs[b]
                        .meta
                        .updated
                        .at
                        .cmp(&rs[a].meta.updated.at)
                        .then_with(|| rs[a].key.cmp(&rs[b].key))
                });
                DuplicateGroup {
                    why: g.why,
                    similarity: g.similarity,
                    keys: m.iter().map(|&i| rs[i].key.to_string()).collect(),
                }
            })
            .collect();
        Ok(Loaded {
            value: ConsolidatePlan {
                threshold,
                memories: snap.records.len(),
                groups,
            },
            problems: snap.problems,
        })
    }
}

fn check_criteria(c: &PruneCriteria) -> Result<()> {
    if let Some(b) = c.below
        && !(b.is_finite() && (0.0..=1.0).contains(&b))
    {
        return Err(Error::Argument {
            arg: "--below".into(),
            message: format!("{b} is not a score; expected a number from 0 to 1"),
        });
    }
    Ok(())
}
