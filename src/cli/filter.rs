//! The filter flags `recall`, `context` and `list` share (spec/cli.md#filters): parsed
//! and checked here so a bad value names its flag, then handed to the engine as one
//! [`Filter`].

use chrono::NaiveDate;

use memdir::Error;
use memdir::memory::Kind;
use memdir::{Filter, FilterError};

/// Which memories the command considers, decided before anything is ranked.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Filters (all must hold)")]
pub struct FilterArgs {
    /// Only memories of these types; repeat the flag or separate with commas
    /// (--type project,feedback).
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',', value_parser = parse_type)]
    pub types: Vec<String>,
    /// Only memories with this tag; repeat for several (each must be present).
    #[arg(long = "tag", value_name = "TAG", value_parser = parse_tag)]
    pub tags: Vec<String>,
    /// Only memories updated on or after this day.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_date)]
    pub since: Option<NaiveDate>,
    /// Only memories updated on or before this day.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_date)]
    pub until: Option<NaiveDate>,
    /// Only memories marked `important: true`.
    #[arg(long)]
    pub important: bool,
    /// Only memories whose salience is at least this (0 to 1; 0.8 keeps feedback,
    /// important memories and well-tagged user ones).
    #[arg(long, value_name = "0..1", value_parser = parse_salience)]
    pub min_salience: Option<f64>,
    /// Also memories another memory supersedes (marked as such).
    #[arg(long)]
    pub include_superseded: bool,
    /// Also memories whose `valid_until` day has passed (marked as such).
    #[arg(long)]
    pub include_expired: bool,
}

fn parse_type(s: &str) -> Result<String, FilterError> {
    match s.trim() {
        "" => Err(FilterError::EmptyType),
        t => Ok(t.to_string()),
    }
}

fn parse_tag(s: &str) -> Result<String, FilterError> {
    match s.trim() {
        "" => Err(FilterError::EmptyTag),
        t => Ok(t.to_string()),
    }
}

fn parse_date(s: &str) -> Result<NaiveDate, FilterError> {
    memdir::parse_date(s)
}

fn parse_salience(s: &str) -> Result<f64, FilterError> {
    let bad = || FilterError::Salience { value: s.into() };
    memdir::check_salience(s.trim().parse().map_err(|_| bad())?).map_err(|_| bad())
}

impl FilterArgs {
    /// The filter the flags describe.
    pub fn filter(&self) -> Result<Filter, Error> {
        let f = Filter {
            types: self.types.iter().map(|t| Kind::parse(t)).collect(),
            tags: self.tags.clone(),
            since: self.since,
            until: self.until,
            important: self.important,
            min_salience: self.min_salience,
            include_superseded: self.include_superseded,
            include_expired: self.include_expired,
        };
        f.check().map_err(|source| Error::Filter {
            arg: "--since/--until".into(),
            source,
        })?;
        Ok(f)
    }
}
