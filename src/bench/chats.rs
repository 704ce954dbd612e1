//! A second retrieval benchmark, generated: long user/assistant chats with facts
//! planted in passing, facts that change later, and questions that need two or
//! three sessions (spec/ranking.md#benchmarks).
//!
//! LoCoMo is two friends chatting in short turns. An agent's memory mostly holds
//! something else: a person asking an assistant for help, the assistant answering
//! at length, and the facts that matter said once, in a subordinate clause, between
//! two requests. This generator writes such conversations in LoCoMo's shape
//! ([`Conversation`]), so the same conversion and scoring measure memdir and the
//! plain baseline on them. Everything is drawn from a seeded generator: the same
//! seed gives the same data on every machine, and other seeds give data nobody
//! tuned on.
//!
//! Categories: 1 a single fact said in passing; 2 a fact that changed (the question
//! asks for the current value or the one before; the evidence is every turn that
//! says it); 3 a
//! preference stated in passing, asked in other words than it was said; 4 a fact
//! spread over two or three sessions (every part is evidence).

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::locomo::{Conversation, Question, Session, Turn};

/// A small deterministic generator (splitmix64): the data must be the same on
/// every machine and in every version of every dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len())]
    }

    /// `k` distinct items of `v`.
    fn distinct<'a>(&mut self, v: &[&'a str], k: usize) -> Vec<&'a str> {
        let mut pool: Vec<&str> = v.to_vec();
        let mut out = Vec::new();
        while out.len() < k && !pool.is_empty() {
            let i = self.below(pool.len());
            out.push(pool.swap_remove(i));
        }
        out
    }
}

const USERS: &[&str] = &[
    "Priya", "Tomás", "Aiko", "Lena", "Marcus", "Nadia", "Oskar", "Fatima", "Jonah", "Ines",
    "Kwame", "Sofia",
];
const PETS: &[(&str, &[&str])] = &[
    (
        "dog",
        &["Biscuit", "Pepper", "Rocket", "Mochi", "Ziggy", "Waffles"],
    ),
    (
        "cat",
        &["Juniper", "Noodle", "Pixel", "Saffron", "Tofu", "Marble"],
    ),
    ("parrot", &["Kiwi", "Mango", "Captain", "Sunny"]),
];
const JOBS: &[&str] = &[
    "data analyst",
    "nurse",
    "high school teacher",
    "civil engineer",
    "product designer",
    "pharmacist",
    "sous chef",
    "backend developer",
    "accountant",
    "physiotherapist",
];
const COMPANIES: &[&str] = &[
    "Northwind Logistics",
    "Helio Health",
    "Brightpath Schools",
    "Cobalt Bridges",
    "Fernleaf Studio",
    "Quayside Pharmacy",
    "Tidewater Bistro",
    "Lumen Software",
    "Ardent Partners",
    "Crescent Clinic",
];
const CITIES: &[&str] = &[
    "Lisbon",
    "Porto",
    "Denver",
    "Montreal",
    "Osaka",
    "Tallinn",
    "Edinburgh",
    "Valencia",
    "Austin",
    "Utrecht",
    "Wellington",
    "Krakow",
    "Seville",
    "Halifax",
];
const RELATIVES: &[&str] = &["sister", "brother", "cousin", "aunt", "best friend"];
const RELATIVE_NAMES: &[&str] = &[
    "Maya", "Rahul", "Greta", "Dmitri", "Chloe", "Yusuf", "Beatriz", "Henrik",
];
const DRINKS: &[&str] = &[
    "a flat white",
    "matcha",
    "black coffee with cardamom",
    "rooibos tea",
    "a cortado",
    "hot lemon water",
];
const DISLIKES: &[&str] = &[
    "cilantro",
    "olives",
    "mushrooms",
    "blue cheese",
    "anchovies",
    "licorice",
];
const AUTHORS: &[&str] = &[
    "Ursula K. Le Guin",
    "Kazuo Ishiguro",
    "Toni Morrison",
    "Italo Calvino",
    "Octavia Butler",
    "Haruki Murakami",
];
const SPORTS: &[&str] = &[
    "bouldering",
    "rowing",
    "pickleball",
    "trail running",
    "swimming",
    "yoga",
];
const CLASSES: &[&str] = &[
    "a pottery class",
    "an evening Spanish course",
    "a salsa workshop",
    "a watercolour class",
    "a first-aid course",
    "a sourdough baking class",
    "a woodworking class",
];
const CONFERENCES: &[&str] = &[
    "a conference",
    "a client workshop",
    "a training week",
    "an offsite",
];

/// Topics a session is about: what the user asks help with, and the words the
/// assistant's long answers are made of.
const TOPICS: &[(&str, &[&str], &[&str])] = &[
    (
        "meal planning",
        &[
            "Can you help me plan dinners for the week?",
            "What is a quick lunch I can prep on Sunday?",
            "How do I make lentil soup taste less flat?",
        ],
        &[
            "batch cooking",
            "a sheet-pan dinner",
            "roasted vegetables",
            "a grain bowl",
            "leftovers",
            "fresh herbs",
            "a squeeze of lemon",
            "the freezer",
        ],
    ),
    (
        "budgeting",
        &[
            "How should I split my salary between savings and spending?",
            "Is it worth paying off a small loan early?",
            "Can you sketch a monthly budget for me?",
        ],
        &[
            "an emergency fund",
            "fixed costs",
            "a spending category",
            "interest rates",
            "automatic transfers",
            "a sinking fund",
            "the fifty-thirty-twenty rule",
        ],
    ),
    (
        "fitness",
        &[
            "Can you suggest a beginner strength routine?",
            "How do I stop my knees hurting after runs?",
            "How many rest days do I need?",
        ],
        &[
            "progressive overload",
            "a warm-up",
            "mobility work",
            "rest days",
            "protein intake",
            "sleep",
            "form over weight",
        ],
    ),
    (
        "travel planning",
        &[
            "What should I pack for a four-day trip?",
            "How do I deal with jet lag?",
            "Can you make a rough itinerary for a weekend?",
        ],
        &[
            "a carry-on",
            "layers",
            "local transit passes",
            "a daily plan",
            "time zones",
            "museum hours",
            "walking tours",
        ],
    ),
    (
        "home repairs",
        &[
            "My kitchen tap keeps dripping, what can I do?",
            "How do I patch a small hole in drywall?",
            "Why does my radiator make a knocking noise?",
        ],
        &[
            "a washer",
            "the shut-off valve",
            "spackle",
            "a putty knife",
            "bleeding the radiator",
            "a plumber",
            "a torque wrench",
        ],
    ),
    (
        "writing help",
        &[
            "Can you tighten this cover letter paragraph?",
            "How do I structure a short report?",
            "What is a good way to start a speech?",
        ],
        &[
            "a clear opening",
            "active voice",
            "one idea per paragraph",
            "a summary up front",
            "concrete examples",
            "a strong close",
        ],
    ),
    (
        "gardening",
        &[
            "When should I plant tomatoes on a balcony?",
            "Why are my basil leaves turning yellow?",
            "What herbs grow well in shade?",
        ],
        &[
            "drainage",
            "a deep pot",
            "morning sun",
            "overwatering",
            "compost",
            "pinching back",
            "frost dates",
        ],
    ),
    (
        "learning to code",
        &[
            "How do I read a stack trace?",
            "What is the difference between a list and a set?",
            "How should I name my variables?",
        ],
        &[
            "the first line of the error",
            "a small example",
            "data structures",
            "readable names",
            "unit tests",
            "version control",
        ],
    ),
];

const FILLER: &[&str] = &[
    "That is a common question, and the answer depends a little on your situation.",
    "Here is how I would approach it, step by step.",
    "A lot of people find it easier to start small and build the habit.",
    "It is worth keeping notes for a couple of weeks so you can see what works.",
    "If anything feels off, stop and adjust rather than pushing through.",
    "There is no single right answer, but a few principles help.",
    "Try it for a week and we can refine it together.",
    "The details matter less than doing it consistently.",
];

struct Planted {
    at: (usize, usize),
    text: String,
}

/// What one conversation's user is like; every question is asked about it.
struct Persona {
    user: String,
    pet_kind: String,
    pet: String,
    jobs: [(String, String); 2],
    cities: [String; 2],
    relative: (String, String, String),
    drink: String,
    dislike: String,
    author: String,
    sport: String,
    trips: Vec<(String, String)>,
    classes: Vec<String>,
}

fn persona(rng: &mut Rng, i: usize) -> Persona {
    let (pet_kind, names) = PETS[rng.below(PETS.len())];
    let jobs = rng.distinct(JOBS, 2);
    let companies = rng.distinct(COMPANIES, 2);
    let cities = rng.distinct(CITIES, 6);
    Persona {
        user: USERS[i % USERS.len()].to_string(),
        pet_kind: pet_kind.into(),
        pet: rng.pick(names).into(),
        jobs: [
            (jobs[0].into(), companies[0].into()),
            (jobs[1].into(), companies[1].into()),
        ],
        cities: [cities[0].into(), cities[1].into()],
        relative: (
            rng.pick(RELATIVES).into(),
            rng.pick(RELATIVE_NAMES).into(),
            cities[2].into(),
        ),
        drink: rng.pick(DRINKS).into(),
        dislike: rng.pick(DISLIKES).into(),
        author: rng.pick(AUTHORS).into(),
        sport: rng.pick(SPORTS).into(),
        trips: cities[3..6]
            .iter()
            .map(|c| (c.to_string(), rng.pick(CONFERENCES).to_string()))
            .collect(),
        classes: rng
            .distinct(CLASSES, 2)
            .into_iter()
            .map(String::from)
            .collect(),
    }
}

/// A long assistant answer about a topic: four to seven sentences from the topic's
/// words and general advice.
fn answer(rng: &mut Rng, words: &[&str], user: &str) -> String {
    let n = 4 + rng.below(4);
    let mut out = Vec::new();
    for k in 0..n {
        let s = match (k + rng.below(5)) % 5 {
            0 => rng.pick(FILLER).to_string(),
            1 => format!(
                "Start with {} and add {} once that feels routine.",
                rng.pick(words),
                rng.pick(words)
            ),
            2 => format!(
                "Most people underestimate {}, {user}, so give it a bit more attention than you think.",
                rng.pick(words)
            ),
            3 => format!(
                "If {} is not practical this week, {} is a reasonable substitute.",
                rng.pick(words),
                rng.pick(words)
            ),
            _ => format!(
                "I would keep {} simple and check back on {} in a few days.",
                rng.pick(words),
                rng.pick(words)
            ),
        };
        out.push(s);
    }
    out.join(" ")
}

const SESSIONS: usize = 18;
const EXCHANGES: usize = 7;

/// One generated conversation, its questions included.
fn conversation(rng: &mut Rng, i: usize) -> Conversation {
    let p = persona(rng, i);
    let start = Utc
        .with_ymd_and_hms(2025, 1, 6, 9, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
        + Duration::days(i as i64 * 3);
    let mut planter = Planter::new();
    let spots = plant_facts(&mut planter, rng, &p);
    let sessions = sessions(rng, start, &planter.planted, &p.user);
    Conversation {
        sample_id: format!("chats-{}", i + 1),
        speakers: [p.user.clone(), "Assistant".into()],
        sessions,
        questions: questions(&p, &spots),
    }
}

/// Where each planted fact goes, and the facts placed so far.
struct Planter {
    /// The free (session, exchange) slots: every planted fact gets its own.
    slots: Vec<(usize, usize)>,
    planted: Vec<Planted>,
}

impl Planter {
    fn new() -> Planter {
        Planter {
            slots: (0..SESSIONS)
                .flat_map(|s| (0..EXCHANGES).map(move |e| (s, e)))
                .collect(),
            planted: Vec::new(),
        }
    }

    /// Plants `text` in a free slot of a session in `lo..hi`, drawn from `rng`, and
    /// returns the slot.
    fn plant(&mut self, rng: &mut Rng, (lo, hi): (usize, usize), text: String) -> (usize, usize) {
        let ok: Vec<usize> = (0..self.slots.len())
            .filter(|&k| (lo..hi).contains(&self.slots[k].0))
            .collect();
        let k = ok[rng.below(ok.len())];
        let at = self.slots.swap_remove(k);
        self.planted.push(Planted { at, text });
        at
    }
}

/// The slot of each planted fact, (session, exchange).
struct Spots {
    pet: (usize, usize),
    job0: (usize, usize),
    job1: (usize, usize),
    city0: (usize, usize),
    city1: (usize, usize),
    relative: (usize, usize),
    drink: (usize, usize),
    dislike: (usize, usize),
    author: (usize, usize),
    sport: (usize, usize),
    trips: Vec<(usize, usize)>,
    classes: Vec<(usize, usize)>,
}

/// Plants the persona's facts, in this order (the generator's draws depend on it):
/// the changing ones early and late, the spread ones one per third or half.
fn plant_facts(f: &mut Planter, rng: &mut Rng, p: &Persona) -> Spots {
    let third = SESSIONS / 3;
    let all = (0, SESSIONS);
    Spots {
        pet: f.plant(
            rng,
            all,
            format!(
                "(our {} {} just knocked the laptop off the table, sorry)",
                p.pet_kind, p.pet
            ),
        ),
        job0: f.plant(
            rng,
            (0, third),
            format!(
                "I'm a {} at {}, so my weeks are fairly packed.",
                p.jobs[0].0, p.jobs[0].1
            ),
        ),
        job1: f.plant(
            rng,
            (2 * third, SESSIONS),
            format!(
                "Big news: I left {} and started as a {} at {} this Monday.",
                p.jobs[0].1, p.jobs[1].0, p.jobs[1].1
            ),
        ),
        city0: f.plant(
            rng,
            (0, third),
            format!("Our flat in {} is tiny, so keep that in mind.", p.cities[0]),
        ),
        city1: f.plant(
            rng,
            (third, 2 * third),
            format!(
                "We finally finished the move from {} to {}; the boxes are still everywhere.",
                p.cities[0], p.cities[1]
            ),
        ),
        relative: f.plant(
            rng,
            all,
            format!(
                "My {} {} is flying in from {} next week, so I want to get this sorted before then.",
                p.relative.0, p.relative.1, p.relative.2
            ),
        ),
        drink: f.plant(
            rng,
            all,
            format!("I can't do anything before {}, it's how every day starts for me.", p.drink),
        ),
        dislike: f.plant(
            rng,
            all,
            format!("Please leave out {} though, I really can't stand it.", p.dislike),
        ),
        author: f.plant(
            rng,
            all,
            format!("I've been rereading {} again, nobody else comes close for me.", p.author),
        ),
        sport: f.plant(
            rng,
            all,
            format!("I go {} twice a week, which is the one thing I never skip.", p.sport),
        ),
        trips: p
            .trips
            .iter()
            .enumerate()
            .map(|(k, (city, what))| {
                f.plant(
                    rng,
                    (k * third, (k + 1) * third),
                    format!("Work is sending me to {city} for {what}, so I'll be away a few days."),
                )
            })
            .collect(),
        classes: p
            .classes
            .iter()
            .enumerate()
            .map(|(k, class)| {
                f.plant(
                    rng,
                    (k * (SESSIONS / 2), (k + 1) * (SESSIONS / 2)),
                    format!("Also, I signed up for {class} on Thursday evenings."),
                )
            })
            .collect(),
    }
}

/// The sessions of `user`'s conversation from `start`: each on one topic, every
/// exchange a request (with a planted fact where its slot is) and a long answer.
fn sessions(rng: &mut Rng, start: DateTime<Utc>, planted: &[Planted], u: &str) -> Vec<Session> {
    let mut sessions = Vec::new();
    for s in 0..SESSIONS {
        let (_, asks, words) = TOPICS[rng.below(TOPICS.len())];
        let at = start + Duration::days(s as i64 * 5) + Duration::hours(rng.below(10) as i64);
        let mut turns = Vec::new();
        for e in 0..EXCHANGES {
            let mut ask = rng.pick(asks).to_string();
            if let Some(pl) = planted.iter().find(|pl| pl.at == (s, e)) {
                ask = if rng.below(2) == 0 {
                    format!("{ask} {}", pl.text)
                } else {
                    format!("{} {ask}", pl.text)
                };
            } else if rng.below(3) == 0 {
                ask = format!("{ask} Thanks for the last answer, it helped.");
            }
            let n = turns.len();
            turns.push(Turn {
                id: format!("D{}:{}", s + 1, n + 1),
                speaker: u.to_string(),
                text: ask,
                image: None,
            });
            turns.push(Turn {
                id: format!("D{}:{}", s + 1, n + 2),
                speaker: "Assistant".into(),
                text: answer(rng, words, u),
                image: None,
            });
        }
        sessions.push(Session {
            number: s as u32 + 1,
            at,
            turns,
        });
    }
    sessions
}

/// The questions about `p`, each with the slots of its evidence.
fn questions(p: &Persona, s: &Spots) -> Vec<Question> {
    let u = &p.user;
    // A planted fact sits in the user turn of its exchange: turn 2e+1.
    let id = |at: (usize, usize)| format!("D{}:{}", at.0 + 1, 2 * at.1 + 1);
    let q = |text: String, category: u8, ev: &[(usize, usize)]| Question {
        text,
        category,
        evidence: ev.iter().map(|&a| id(a)).collect(),
        unknown_evidence: 0,
    };
    vec![
        q(
            format!("What is the name of {u}'s {}?", p.pet_kind),
            1,
            &[s.pet],
        ),
        q(
            format!("Which relative of {u} was flying in, and from where?"),
            1,
            &[s.relative],
        ),
        q(format!("How often does {u} go {}?", p.sport), 1, &[s.sport]),
        q(format!("Where does {u} work now?"), 2, &[s.job1]),
        q(
            format!("Where did {u} start working this Monday?"),
            2,
            &[s.job1],
        ),
        q(format!("Which city did {u} move to?"), 2, &[s.city1]),
        // The turn that changed the fact names the old value too.
        q(
            format!("Where did {u} work before the new job?"),
            2,
            &[s.job0, s.job1],
        ),
        q(
            format!("Where did {u} live before moving?"),
            2,
            &[s.city0, s.city1],
        ),
        q(
            format!("What does {u} drink first thing in the morning?"),
            3,
            &[s.drink],
        ),
        q(
            format!("Which ingredient should be kept out of {u}'s food?"),
            3,
            &[s.dislike],
        ),
        q(format!("Who is {u}'s favourite writer?"), 3, &[s.author]),
        q(
            format!("Which cities has {u} travelled to for work?"),
            4,
            &s.trips,
        ),
        q(
            format!("What evening classes has {u} signed up for?"),
            4,
            &s.classes,
        ),
        q(
            format!("How has {u}'s job changed over time?"),
            4,
            &[s.job0, s.job1],
        ),
        q(
            format!("Which cities has {u} lived in?"),
            4,
            &[s.city0, s.city1],
        ),
    ]
}

/// `n` generated conversations from `seed`.
pub fn generate(seed: u64, n: usize) -> Vec<Conversation> {
    let mut rng = Rng(seed);
    (0..n).map(|i| conversation(&mut rng, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_data_and_another_differs() {
        let a = generate(7, 2);
        assert_eq!(a, generate(7, 2));
        assert_ne!(a, generate(8, 2));
    }

    #[test]
    fn every_evidence_id_names_a_user_turn_holding_its_fact() {
        for c in generate(1, 4) {
            assert_eq!(c.sessions.len(), SESSIONS);
            let turns: std::collections::HashMap<&str, &Turn> = c
                .sessions
                .iter()
                .flat_map(|s| s.turns.iter().map(|t| (t.id.as_str(), t)))
                .collect();
            assert_eq!(c.questions.len(), 15);
            for q in &c.questions {
                assert!(!q.evidence.is_empty(), "{}", q.text);
                for e in &q.evidence {
                    let t = turns.get(e.as_str()).unwrap_or_else(|| panic!("{e}"));
                    assert_eq!(t.speaker, c.speakers[0], "{e} is the user's turn");
                    assert!(t.text.len() > 60, "{e}: the fact is said beside a request");
                }
            }
            // Multi-session questions span sessions.
            for q in c.questions.iter().filter(|q| q.category == 4) {
                let sessions: std::collections::HashSet<&str> = q
                    .evidence
                    .iter()
                    .map(|e| e.split(':').next().unwrap())
                    .collect();
                assert!(sessions.len() >= 2, "{}: {:?}", q.text, q.evidence);
            }
        }
    }
}
