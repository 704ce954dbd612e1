//! Tests of queries answered through the postings saved with the search index
//! ([`Corpus::attach_saved`]): the scan's scores, bit for bit, whatever changed since
//! the postings were made and whichever of their runs is damaged.

use crate::retrieval::search::scoring::tests::same_scores;
use crate::retrieval::search::tests::{changed, data_of, random_records};
use crate::retrieval::search::{Corpus, DocData, Frozen, FrozenParts, Vocab};

const QUERIES: [&str; 7] = [
    "cello",
    "Ana cello tempo",
    "knee physio tempo run",
    "what did Ben say about the morning coffee in Paris",
    "flat white",
    "Paris: dog walk",
    "nothing matches",
];

/// The postings of `docs` as a main index file would save them (slot = position).
fn saved(docs: &[DocData], terms: usize) -> FrozenParts {
    let by_slot: Vec<(u32, &DocData)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (i as u32, d))
        .collect();
    FrozenParts::build(docs.len() as u32, terms, &by_slot).expect("integral weights")
}

#[test]
fn saved_postings_score_as_the_scan() {
    for seed in 1..=12 {
        let records = random_records(seed, 40);
        let mut vocab = Vocab::default();
        let main: Vec<DocData> = records.iter().map(|r| DocData::of(r, &mut vocab)).collect();
        let parts = saved(&main, vocab.len());
        let (now, origin) = changed(seed, &records, 9);
        let docs = data_of(&now, &origin, &main, &mut vocab);
        let scan = Corpus::from_parts(vocab.clone(), docs.clone());
        let mut through = Corpus::from_parts(vocab.clone(), docs.clone());
        through.attach_saved(Frozen::new(parts.clone()).unwrap(), &origin);
        assert!(through.has_saved_postings());
        // Queries some memory holds whole (the phrase part of relevance).
        let phrases: Vec<String> = now
            .iter()
            .flat_map(|r| r.body.lines())
            .filter_map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                (w.len() >= 5).then(|| w[1..5].join(" "))
            })
            .take(6)
            .collect();
        let queries: Vec<&str> = QUERIES
            .iter()
            .copied()
            .chain(phrases.iter().map(String::as_str))
            .collect();
        same_scores(&scan, &through, &now, &queries, &format!("seed {seed}"));
        // A run that fails its CRC is never read: that term's queries scan.
        let mut bad = parts.clone();
        let mut crc = bad.crc.to_vec();
        for c in crc.iter_mut().step_by(3) {
            *c ^= 1;
        }
        bad.crc = crc.into();
        let mut damaged = Corpus::from_parts(vocab.clone(), docs.clone());
        damaged.attach_saved(Frozen::new(bad).unwrap(), &origin);
        same_scores(
            &scan,
            &damaged,
            &now,
            &queries,
            &format!("damaged, seed {seed}"),
        );
        // More than a quarter of the memories not the main file's: a scan (their
        // postings would cost more to build than the scan does).
        let most_new: Vec<Option<usize>> = origin
            .iter()
            .enumerate()
            .map(|(j, o)| o.filter(|_| j % 3 == 0))
            .collect();
        let mut mostly_new = Corpus::from_parts(vocab.clone(), docs.clone());
        mostly_new.attach_saved(Frozen::new(parts.clone()).unwrap(), &most_new);
        assert!(!mostly_new.has_saved_postings());
        // A slot past the postings' is data they do not hold.
        let past: Vec<Option<usize>> = origin.iter().map(|o| o.map(|i| i + 1000)).collect();
        let mut foreign = Corpus::from_parts(vocab.clone(), docs);
        foreign.attach_saved(Frozen::new(parts).unwrap(), &past);
        same_scores(
            &scan,
            &foreign,
            &now,
            &queries,
            &format!("slots past, seed {seed}"),
        );
    }
}

#[test]
fn postings_that_do_not_fit_together_are_refused() {
    let records = random_records(3, 20);
    let mut vocab = Vocab::default();
    let docs: Vec<DocData> = records.iter().map(|r| DocData::of(r, &mut vocab)).collect();
    let good = saved(&docs, vocab.len());
    assert!(Frozen::new(good.clone()).is_some());
    // A memory whose count of the lines holding a term is not its lines': no
    // postings (a run would be cut short or left with a gap).
    let d = docs
        .iter()
        .find(|d| d.line_df.iter().any(|x| x[1] > 1))
        .unwrap();
    let at = d.line_df.iter().position(|x| x[1] > 1).unwrap();
    for change in [1i64, -1] {
        let mut wrong = d.clone();
        let mut df = wrong.line_df.to_vec();
        df[at][1] = (i64::from(df[at][1]) + change) as u32;
        wrong.line_df = df.into();
        assert!(
            FrozenParts::build(1, vocab.len(), &[(0, &wrong)]).is_none(),
            "{change}"
        );
    }
    let n = vocab.len();
    assert!(FrozenParts::build(1, n, &[(0, d)]).is_some());
    let mut short = good.clone();
    short.doc_tf = good.doc_tf[1..].to_vec().into();
    assert!(Frozen::new(short).is_none(), "runs of different lengths");
    let mut back = good.clone();
    let mut start = good.line_start.to_vec();
    start[1] = start[2] + 1;
    back.line_start = start.into();
    assert!(Frozen::new(back).is_none(), "a start past the next");
    let mut over = good.clone();
    let mut start = good.doc_start.to_vec();
    *start.last_mut().unwrap() += 1;
    over.doc_start = start.into();
    assert!(Frozen::new(over).is_none(), "a last start past the runs");
    // A slot past the postings' slots, with its CRC made to match: refused by the
    // check, never read.
    let mut wild = good.clone();
    let mut slots = good.doc_slot.to_vec();
    slots[0] = good.slots + 5;
    wild.doc_slot = slots.into();
    let t = (0..wild.terms())
        .find(|&t| wild.doc_start[t] == 0 && wild.doc_start[t + 1] > 0)
        .unwrap();
    let (d, l) = (
        wild.doc_start[t] as usize..wild.doc_start[t + 1] as usize,
        wild.line_start[t] as usize..wild.line_start[t + 1] as usize,
    );
    let mut crc = wild.crc.to_vec();
    crc[t] = crate::retrieval::postings::run_crc(
        &wild.doc_slot[d.clone()],
        &wild.doc_tf[d],
        &wild.line_post[l],
    );
    wild.crc = crc.into();
    let f = Frozen::new(wild).unwrap();
    assert!(!f.check(t as u32));
    assert!(f.check(wild_other(t)), "another term is whole");
}

/// A term other than `t`.
fn wild_other(t: usize) -> u32 {
    (t + 1) as u32
}
