//! Filters on `recall`, `context` and `list` (spec/ranking.md#filters): which memories
//! may appear at all, decided from their metadata before anything is ranked.
//!
//! Pure matching over [`Meta`]: parsing a filter's values (dates, salience) and
//! testing a memory. Whether a type names a type the store knows is the engine's
//! check ([`Filter::unknown_type`]), since only it has the store.

use std::collections::HashMap;

use chrono::NaiveDate;
use thiserror::Error;

use crate::memory::{Kind, Meta, Record};
use crate::retrieval::rank;

/// Salience is a sum of tenths and twentieths in floating point (`user` with 5 tags is
/// 0.8999999999999999); a minimum within this much of it still matches.
const SALIENCE_SLACK: f64 = 1e-9;

/// What a memory must satisfy to be listed, recalled or packed. The default filter
/// lets every memory through.
///
/// ```
/// use memdir::Filter;
/// let f = Filter::default()
///     .types(["project", "feedback"])
///     .tag("football")
///     .since("2026-04-01").unwrap()
///     .min_salience(0.6).unwrap();
/// assert!(!f.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Any of these types (empty: any type).
    pub types: Vec<Kind>,
    /// Every one of these tags, compared case-insensitively (empty: any tags).
    pub tags: Vec<String>,
    /// `updated` on or after this day (UTC).
    pub since: Option<NaiveDate>,
    /// `updated` on or before this day (UTC).
    pub until: Option<NaiveDate>,
    /// Only memories marked `important: true`.
    pub important: bool,
    /// Salience at least this (in 0..=1).
    pub min_salience: Option<f64>,
    /// Also memories another memory supersedes (left out by default).
    pub include_superseded: bool,
    /// Also memories whose `valid_until` day has passed (left out by default).
    pub include_expired: bool,
}

/// Which memories of a store are superseded or expired on a day
/// (spec/ranking.md#superseded-and-expired): derived from the whole store, since a
/// memory is superseded when another loaded memory lists its key in `supersedes`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lifecycle {
    /// Key of a superseded memory → keys of the memories that supersede it, sorted.
    superseded_by: HashMap<String, Vec<String>>,
    today: NaiveDate,
}

impl Lifecycle {
    /// The lifecycle of `records` on `today` (the memdir clock's UTC day).
    pub fn of(records: &[Record], today: NaiveDate) -> Lifecycle {
        let mut superseded_by: HashMap<String, Vec<String>> = HashMap::new();
        // The set of keys only when some memory supersedes another: a query of a
        // large store pays for it only then.
        let mut supersede = records.iter().filter(|r| !r.meta.supersedes.is_empty());
        let Some(first) = supersede.next() else {
            return Lifecycle {
                superseded_by,
                today,
            };
        };
        let present: std::collections::HashSet<&str> =
            records.iter().map(|r| r.key.as_str()).collect();
        for r in std::iter::once(first).chain(supersede) {
            for old in &r.meta.supersedes {
                let old = old.strip_suffix(".md").unwrap_or(old);
                // A memory cannot supersede itself, and a key no memory has is nothing.
                if old != r.key.as_str() && present.contains(old) {
                    let by = superseded_by.entry(old.to_string()).or_default();
                    if !by.iter().any(|k| k == r.key.as_str()) {
                        by.push(r.key.to_string());
                    }
                }
            }
        }
        for v in superseded_by.values_mut() {
            v.sort();
        }
        Lifecycle {
            superseded_by,
            today,
        }
    }

    /// The day expiry is judged on.
    pub fn today(&self) -> NaiveDate {
        self.today
    }

    /// Keys of the memories that supersede `key` (empty when none does).
    pub fn superseded_by(&self, key: &str) -> &[String] {
        self.superseded_by.get(key).map_or(&[], Vec::as_slice)
    }

    /// Whether `r` has expired today.
    pub fn expired(&self, r: &Record) -> bool {
        r.meta.expired(self.today)
    }

    /// A short marker for a superseded or expired memory (`superseded by k`,
    /// `expired after 2026-01-01`), `None` for a current one.
    pub fn mark(&self, r: &Record) -> Option<String> {
        let mut parts = Vec::new();
        let by = self.superseded_by(r.key.as_str());
        if !by.is_empty() {
            parts.push(format!("superseded by {}", by.join(", ")));
        }
        if self.expired(r) {
            parts.push(format!(
                "expired after {}",
                r.meta.valid_until.as_deref().unwrap_or_default().trim()
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A filter value that cannot be used; the caller names the flag or argument.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FilterError {
    /// A date that is not `YYYY-MM-DD`.
    #[error("`{value}` is not a date; expected YYYY-MM-DD")]
    Date {
        /// The value given.
        value: String,
    },
    /// A salience that is not a number from 0 to 1.
    #[error("{value} is not a salience; expected a number from 0 to 1")]
    Salience {
        /// The value given.
        value: String,
    },
    /// A since date after the until date.
    #[error("the since date {since} is after the until date {until}")]
    Range {
        /// The first day asked for.
        since: NaiveDate,
        /// The last day asked for.
        until: NaiveDate,
    },
    /// A memory type memdir does not know.
    #[error("unknown type `{kind}` in the type filter; known types: {}", .known.join(", "))]
    UnknownType {
        /// The type given.
        kind: String,
        /// The types memdir knows.
        known: Vec<String>,
    },
    /// An empty entry in a list of types.
    #[error("an empty type in the type filter")]
    EmptyType,
    /// An empty entry in a list of tags.
    #[error("an empty tag in the tag filter")]
    EmptyTag,
}

/// Parses a filter date `YYYY-MM-DD`.
pub fn parse_date(s: &str) -> Result<NaiveDate, FilterError> {
    let t = s.trim();
    match NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        Ok(d) if t.len() == 10 => Ok(d),
        _ => Err(FilterError::Date { value: s.into() }),
    }
}

/// Checks a minimum salience: a finite number in 0..=1.
pub fn check_salience(v: f64) -> Result<f64, FilterError> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(FilterError::Salience {
            value: v.to_string(),
        })
    }
}

/// Splits a type list (`project,feedback`) into types; every item must be non-empty.
pub fn parse_types(s: &str) -> Result<Vec<Kind>, FilterError> {
    s.split(',')
        .map(|t| match t.trim() {
            "" => Err(FilterError::EmptyType),
            t => Ok(Kind::parse(t)),
        })
        .collect()
}

impl Filter {
    /// Whether the filter sets no condition on metadata (superseded and expired
    /// memories are still left out unless included).
    pub fn is_empty(&self) -> bool {
        Filter {
            include_superseded: false,
            include_expired: false,
            ..self.clone()
        } == Filter::default()
    }

    /// Whether the filter lets every memory through, superseded and expired ones too.
    pub fn admits_all(&self) -> bool {
        self.is_empty() && self.include_superseded && self.include_expired
    }

    /// Also superseded memories.
    pub fn include_superseded(mut self) -> Filter {
        self.include_superseded = true;
        self
    }

    /// Also expired memories.
    pub fn include_expired(mut self) -> Filter {
        self.include_expired = true;
        self
    }

    /// Whether a memory of the store described by `life` passes: its metadata
    /// matches, and it is neither superseded nor expired unless those are included
    /// (spec/ranking.md#superseded-and-expired).
    pub fn admits(&self, r: &Record, life: &Lifecycle) -> bool {
        if !self.include_superseded && !life.superseded_by(r.key.as_str()).is_empty() {
            return false;
        }
        if !self.include_expired && life.expired(r) {
            return false;
        }
        self.matches(&r.meta)
    }

    /// Adds types (any of them matches).
    pub fn types<I: IntoIterator<Item = S>, S: AsRef<str>>(mut self, types: I) -> Filter {
        self.types
            .extend(types.into_iter().map(|t| Kind::parse(t.as_ref())));
        self
    }

    /// Adds a tag (all must match).
    pub fn tag(mut self, tag: impl Into<String>) -> Filter {
        self.tags.push(tag.into());
        self
    }

    /// Only memories updated on or after `date` (`YYYY-MM-DD`).
    pub fn since(mut self, date: &str) -> Result<Filter, FilterError> {
        self.since = Some(parse_date(date)?);
        self.check()?;
        Ok(self)
    }

    /// Only memories updated on or before `date` (`YYYY-MM-DD`).
    pub fn until(mut self, date: &str) -> Result<Filter, FilterError> {
        self.until = Some(parse_date(date)?);
        self.check()?;
        Ok(self)
    }

    /// Only important memories.
    pub fn important(mut self) -> Filter {
        self.important = true;
        self
    }

    /// Only memories of salience at least `v` (0..=1).
    pub fn min_salience(mut self, v: f64) -> Result<Filter, FilterError> {
        self.min_salience = Some(check_salience(v)?);
        Ok(self)
    }

    /// Checks what can be checked without the store: the salience range, a date
    /// range that is not empty by construction, no empty tag or type.
    pub fn check(&self) -> Result<(), FilterError> {
        if let Some(v) = self.min_salience {
            check_salience(v)?;
        }
        if let (Some(since), Some(until)) = (self.since, self.until)
            && since > until
        {
            return Err(FilterError::Range { since, until });
        }
        if self.tags.iter().any(|t| t.trim().is_empty()) {
            return Err(FilterError::EmptyTag);
        }
        if self.types.iter().any(|k| k.as_str().trim().is_empty()) {
            return Err(FilterError::EmptyType);
        }
        Ok(())
    }

    /// The first type of the filter that is neither a standard type nor one of
    /// `present` (the types of the store's memories), as an error listing the known
    /// types.
    pub fn unknown_type<'a>(
        &self,
        present: impl IntoIterator<Item = &'a Kind>,
    ) -> Result<(), FilterError> {
        if self.types.is_empty() {
            return Ok(());
        }
        let mut known: Vec<Kind> = vec![
            Kind::User,
            Kind::Feedback,
            Kind::Project,
            Kind::Reference,
            Kind::State,
        ];
        for k in present {
            if !known.contains(k) {
                known.push(k.clone());
            }
        }
        match self.types.iter().find(|t| !known.contains(t)) {
            None => Ok(()),
            Some(t) => {
                known[5..].sort_by(|a, b| a.as_str().cmp(b.as_str()));
                Err(FilterError::UnknownType {
                    kind: t.as_str().to_string(),
                    known: known.iter().map(|k| k.as_str().to_string()).collect(),
                })
            }
        }
    }

    /// Whether a memory's metadata passes the filter (superseded and expired are
    /// judged by [`Filter::admits`], which needs the store).
    pub fn matches(&self, meta: &Meta) -> bool {
        if !self.types.is_empty() && !self.types.contains(&meta.kind) {
            return false;
        }
        if !self.tags.iter().all(|want| {
            let want = want.trim().to_lowercase();
            meta.tags.iter().any(|t| t.trim().to_lowercase() == want)
        }) {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            let day = meta.updated.at.date_naive();
            if self.since.is_some_and(|d| day < d) || self.until.is_some_and(|d| day > d) {
                return false;
            }
        }
        if self.important && !meta.important {
            return false;
        }
        if let Some(min) = self.min_salience
            && rank::salience(meta) + SALIENCE_SLACK < min
        {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Stamp;
    use crate::memory::frontmatter::Extra;

    fn meta(kind: &str, tags: &[&str], important: bool, updated: &str) -> Meta {
        Meta {
            name: "n".into(),
            description: "d".into(),
            kind: Kind::parse(kind),
            created: Stamp::parse("2026-01-01").unwrap(),
            updated: Stamp::parse(updated).unwrap(),
            source: None,
            decay: None,
            tags: tags.iter().map(|t| t.to_string()).collect(),
            important,
            supersedes: Vec::new(),
            valid_until: None,
            extra: Extra::default(),
        }
    }

    /// One filter, one memory, whether it passes.
    fn check(f: &Filter, m: &Meta, want: bool) {
        assert_eq!(f.matches(m), want, "{f:?} on {m:?}");
    }

    #[test]
    fn the_empty_filter_passes_everything() {
        // spec/ranking.md#filters
        let f = Filter::default();
        assert!(f.is_empty());
        check(&f, &meta("ops", &[], false, "1999-01-01"), true);
        check(&f, &meta("user", &["a"], true, "2026-04-14"), true);
    }

    #[test]
    fn types_any_of() {
        // spec/ranking.md#filters
        let f = Filter::default().types(["project", "feedback"]);
        check(&f, &meta("project", &[], false, "2026-04-14"), true);
        check(&f, &meta("feedback", &[], false, "2026-04-14"), true);
        check(&f, &meta("user", &[], false, "2026-04-14"), false);
        let f = Filter::default().types(["ops"]);
        check(&f, &meta("ops", &[], false, "2026-04-14"), true);
        check(&f, &meta("user", &[], false, "2026-04-14"), false);
    }

    #[test]
    fn tags_all_of_case_insensitive() {
        // spec/ranking.md#filters
        let f = Filter::default().tag("football").tag("Weekend");
        check(
            &f,
            &meta("user", &["weekend", "Football", "x"], false, "2026-04-14"),
            true,
        );
        check(&f, &meta("user", &["football"], false, "2026-04-14"), false);
        check(&f, &meta("user", &[], false, "2026-04-14"), false);
    }

    #[test]
    fn since_and_until_are_inclusive_days_of_updated() {
        // spec/ranking.md#filters
        let f = Filter::default()
            .since("2026-04-01")
            .unwrap()
            .until("2026-04-14")
            .unwrap();
        check(&f, &meta("user", &[], false, "2026-04-01"), true);
        check(&f, &meta("user", &[], false, "2026-04-14"), true);
        check(&f, &meta("user", &[], false, "2026-04-14T23:59:59Z"), true);
        check(&f, &meta("user", &[], false, "2026-03-31T23:59:59Z"), false);
        check(&f, &meta("user", &[], false, "2026-04-15"), false);
    }

    #[test]
    fn important_and_min_salience() {
        // spec/ranking.md#filters
        let f = Filter::default().important();
        check(&f, &meta("reference", &[], true, "2026-04-14"), true);
        check(&f, &meta("feedback", &[], false, "2026-04-14"), false);
        // user with 5 tags is 0.8999999999999999: it still passes a minimum of 0.9.
        let f = Filter::default().min_salience(0.9).unwrap();
        check(
            &f,
            &meta("user", &["a", "b", "c", "d", "e"], false, "2026-04-14"),
            true,
        );
        check(
            &f,
            &meta("user", &["a", "b", "c"], false, "2026-04-14"),
            false,
        );
        check(&f, &meta("reference", &[], true, "2026-04-14"), true);
        let f = Filter::default().min_salience(0.0).unwrap();
        check(&f, &meta("ops", &[], false, "2026-04-14"), true);
    }

    #[test]
    fn combinations_must_all_hold() {
        // spec/ranking.md#filters
        let f = Filter::default()
            .types(["user"])
            .tag("football")
            .since("2026-04-01")
            .unwrap()
            .min_salience(0.7)
            .unwrap();
        check(&f, &meta("user", &["football"], false, "2026-04-02"), true);
        check(
            &f,
            &meta("project", &["football"], false, "2026-04-02"),
            false,
        );
        check(&f, &meta("user", &[], false, "2026-04-02"), false);
        check(&f, &meta("user", &["football"], false, "2026-03-02"), false);
        let f = f.important();
        check(&f, &meta("user", &["football"], false, "2026-04-02"), false);
        check(&f, &meta("user", &["football"], true, "2026-04-02"), true);
    }

    #[test]
    fn bad_values_are_errors() {
        // spec/ranking.md#filters
        for bad in [
            "2026-4-1",
            "yesterday",
            "2026-02-30",
            "",
            "2026-04-01T00:00:00Z",
        ] {
            assert_eq!(
                parse_date(bad),
                Err(FilterError::Date { value: bad.into() }),
                "{bad}"
            );
        }
        assert_eq!(parse_date("2026-04-01").unwrap().to_string(), "2026-04-01");
        for bad in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
            assert!(check_salience(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Filter::default().min_salience(2.0).unwrap_err().to_string(),
            "2 is not a salience; expected a number from 0 to 1"
        );
        let e = Filter::default()
            .since("2026-05-01")
            .unwrap()
            .until("2026-04-01")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the since date 2026-05-01 is after the until date 2026-04-01"
        );
        assert_eq!(parse_types("user,,project"), Err(FilterError::EmptyType));
        assert_eq!(
            parse_types(" user , ops ").unwrap(),
            vec![Kind::User, Kind::parse("ops")]
        );
        assert_eq!(
            Filter::default().tag(" ").check(),
            Err(FilterError::EmptyTag)
        );
    }

    #[test]
    fn unknown_types_list_the_known_ones() {
        // spec/ranking.md#filters
        let present = [Kind::parse("ops"), Kind::User, Kind::parse("chores")];
        let f = Filter::default().types(["ops", "user"]);
        assert_eq!(f.unknown_type(&present), Ok(()));
        let f = Filter::default().types(["user", "projects"]);
        assert_eq!(
            f.unknown_type(&present).unwrap_err().to_string(),
            "unknown type `projects` in the type filter; known types: user, feedback, project, reference, state, chores, ops"
        );
    }
}
