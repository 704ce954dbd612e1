//! Detection of secrets (API keys, tokens, private keys) in text about to be stored.
//!
//! memdir refuses to store a memory or timeline event that looks like it carries a
//! credential: an agent that was handed a key must not write it into a directory that
//! may be synced to a public network. This module only recognizes; it never logs or
//! returns the secret itself, only the kind. Pure code: no IO.
//!
//! Each kind is a prefix (or a named field) at a word start followed by a token of a
//! given charset and length. Where a prefix is short enough to begin ordinary words or
//! identifiers (`sk-`, `hf_`, `npm_`, …) the token must also look random: at least one
//! of its `-`/`_`-separated segments mixes letters with digits or both letter cases, so
//! `sk-payments-service-production` (a slug) is not a key. The cases, true and false,
//! are in `fixtures/secrets/corpus.txt` (spec/memory-format.md#secrets).

/// The kinds of secret memdir recognizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// An OpenAI-style API key (`sk-…`).
    OpenAiKey,
    /// An Anthropic API key (`sk-ant-…`).
    AnthropicKey,
    /// A GitHub token (`ghp_…`, `github_pat_…`).
    GitHubToken,
    /// A GitLab token (`glpat-…`).
    GitLabToken,
    /// An AWS access key id (`AKIA…`).
    AwsAccessKey,
    /// An AWS secret access key.
    AwsSecretKey,
    /// A PEM or PGP private key.
    PrivateKey,
    /// A JSON Web Token.
    Jwt,
    /// A Slack token (`xox…`).
    SlackToken,
    /// A Slack webhook URL.
    SlackWebhook,
    /// A Google API key (`AIza…`).
    GoogleApiKey,
    /// A Stripe secret key (`sk_live_…`, `sk_test_…`).
    StripeKey,
    /// A Hugging Face token (`hf_…`).
    HuggingFaceToken,
    /// An npm token (`npm_…`).
    NpmToken,
    /// An Azure account key (`AccountKey=…`).
    AzureKey,
    /// A URL with a password (`scheme://user:password@…`).
    UrlCredentials,
    /// A memdir key file's secret (`secret: …`).
    MemdirKey,
}

impl SecretKind {
    /// Every kind, for tests and documentation.
    pub const ALL: [SecretKind; 17] = [
        SecretKind::OpenAiKey,
        SecretKind::AnthropicKey,
        SecretKind::GitHubToken,
        SecretKind::GitLabToken,
        SecretKind::AwsAccessKey,
        SecretKind::AwsSecretKey,
        SecretKind::PrivateKey,
        SecretKind::Jwt,
        SecretKind::SlackToken,
        SecretKind::SlackWebhook,
        SecretKind::GoogleApiKey,
        SecretKind::StripeKey,
        SecretKind::HuggingFaceToken,
        SecretKind::NpmToken,
        SecretKind::AzureKey,
        SecretKind::UrlCredentials,
        SecretKind::MemdirKey,
    ];

    /// Human name of the kind, for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::OpenAiKey => "an OpenAI-style API key (sk-…)",
            SecretKind::AnthropicKey => "an Anthropic API key (sk-ant-…)",
            SecretKind::GitHubToken => "a GitHub token (ghp_…, github_pat_…)",
            SecretKind::GitLabToken => "a GitLab token (glpat-…)",
            SecretKind::AwsAccessKey => "an AWS access key id (AKIA…)",
            SecretKind::AwsSecretKey => "an AWS secret access key",
            SecretKind::PrivateKey => "a PEM or PGP private key",
            SecretKind::Jwt => "a JSON Web Token",
            SecretKind::SlackToken => "a Slack token (xox…)",
            SecretKind::SlackWebhook => "a Slack webhook URL",
            SecretKind::GoogleApiKey => "a Google API key (AIza…)",
            SecretKind::StripeKey => "a Stripe secret key (sk_live_…, sk_test_…)",
            SecretKind::HuggingFaceToken => "a Hugging Face token (hf_…)",
            SecretKind::NpmToken => "an npm token (npm_…)",
            SecretKind::AzureKey => "an Azure account key (AccountKey=…)",
            SecretKind::UrlCredentials => "a URL with a password (scheme://user:password@…)",
            SecretKind::MemdirKey => "a memdir key file secret (secret: …)",
        }
    }

    /// Short stable name (the labels of `fixtures/secrets/corpus.txt`).
    pub fn name(self) -> &'static str {
        match self {
            SecretKind::OpenAiKey => "openai",
            SecretKind::AnthropicKey => "anthropic",
            SecretKind::GitHubToken => "github",
            SecretKind::GitLabToken => "gitlab",
            SecretKind::AwsAccessKey => "aws_access_key",
            SecretKind::AwsSecretKey => "aws_secret_key",
            SecretKind::PrivateKey => "private_key",
            SecretKind::Jwt => "jwt",
            SecretKind::SlackToken => "slack_token",
            SecretKind::SlackWebhook => "slack_webhook",
            SecretKind::GoogleApiKey => "google",
            SecretKind::StripeKey => "stripe",
            SecretKind::HuggingFaceToken => "huggingface",
            SecretKind::NpmToken => "npm",
            SecretKind::AzureKey => "azure",
            SecretKind::UrlCredentials => "url_credentials",
            SecretKind::MemdirKey => "memdir_key",
        }
    }
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

fn is_base64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

/// Length of the run of characters accepted by `ok` starting at `i`.
fn run_len(b: &[u8], i: usize, ok: impl Fn(u8) -> bool) -> usize {
    b[i.min(b.len())..].iter().take_while(|c| ok(**c)).count()
}

/// The run of token characters starting at `i`.
fn token_at(b: &[u8], i: usize) -> &[u8] {
    let i = i.min(b.len());
    &b[i..i + run_len(b, i, is_token_char)]
}

/// Whether position `i` starts a word (not preceded by a token character), so that
/// `task-sk-…` inside a longer identifier is not mistaken for a key prefix.
fn at_word_start(b: &[u8], i: usize) -> bool {
    i == 0 || !is_token_char(b[i - 1])
}

/// Whether a token of at least `min` characters looks generated rather than written:
/// some `-`/`_`-separated segment mixes letters with digits, or lower with upper case.
/// A slug of plain words and numbers (`payments-service-production-2024`) does not.
fn looks_random(tok: &[u8], min: usize) -> bool {
    tok.len() >= min
        && tok.split(|c| *c == b'-' || *c == b'_').any(|seg| {
            let lower = seg.iter().any(u8::is_ascii_lowercase);
            let upper = seg.iter().any(u8::is_ascii_uppercase);
            let digit = seg.iter().any(u8::is_ascii_digit);
            (lower || upper) && (digit || (lower && upper))
        })
}

/// Returns the first kind of secret found in `text`, if any.
///
/// ```
/// use memdir::memory::secrets::{find_secret, SecretKind};
/// assert_eq!(find_secret("key: sk-abcdefghijklmnopqrstuvwxyz012345"), Some(SecretKind::OpenAiKey));
/// assert_eq!(find_secret("the user likes sky-blue"), None);
/// assert_eq!(find_secret("deploy sk-payments-service-production"), None);
/// ```
pub fn find_secret(text: &str) -> Option<SecretKind> {
    let b = text.as_bytes();
    if let Some(k) = find_private_key_block(text) {
        return Some(k);
    }
    for i in 0..b.len() {
        if !at_word_start(b, i) {
            continue;
        }
        if let Some(k) = prefixed_token(b, i) {
            return Some(k);
        }
    }
    find_named_secret(text)
        .or_else(|| find_url_credentials(b))
        .or_else(|| find_slack_webhook(text))
}

/// A token introduced by a prefix, at word start `i`.
fn prefixed_token(b: &[u8], i: usize) -> Option<SecretKind> {
    let rest = &b[i..];
    let after = |p: &[u8]| rest.starts_with(p).then(|| token_at(b, i + p.len()));
    if let Some(t) = after(b"sk-ant-") {
        return looks_random(t, 20).then_some(SecretKind::AnthropicKey);
    }
    if let Some(t) = after(b"sk-") {
        // Project, service-account and admin keys carry a word before the random part.
        let t = ["proj-", "svcacct-", "admin-"]
            .iter()
            .find_map(|p| t.strip_prefix(p.as_bytes()))
            .unwrap_or(t);
        return looks_random(t, 20).then_some(SecretKind::OpenAiKey);
    }
    for p in [&b"ghp_"[..], b"gho_", b"ghu_", b"ghs_", b"ghr_"] {
        if rest.starts_with(p) && run_len(b, i + 4, |c| c.is_ascii_alphanumeric()) >= 30 {
            return Some(SecretKind::GitHubToken);
        }
    }
    if rest.starts_with(b"github_pat_") && run_len(b, i + 11, is_token_char) >= 22 {
        return Some(SecretKind::GitHubToken);
    }
    if let Some(t) = after(b"glpat-") {
        return looks_random(t, 20).then_some(SecretKind::GitLabToken);
    }
    for p in [&b"AKIA"[..], b"ASIA"] {
        if rest.starts_with(p)
            && run_len(b, i + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit()) == 16
        {
            return Some(SecretKind::AwsAccessKey);
        }
    }
    if rest.starts_with(b"eyJ") && is_jwt(b, i) {
        return Some(SecretKind::Jwt);
    }
    if rest.len() > 5
        && rest.starts_with(b"xox")
        && matches!(rest[3], b'a' | b'b' | b'p' | b'r' | b's')
        && rest[4] == b'-'
    {
        // Slack tokens start with the numeric team or user id.
        let t = token_at(b, i + 5);
        if t.len() >= 10 && t.first().is_some_and(u8::is_ascii_digit) {
            return Some(SecretKind::SlackToken);
        }
    }
    if rest.starts_with(b"AIza") && run_len(b, i + 4, is_token_char) >= 35 {
        return Some(SecretKind::GoogleApiKey);
    }
    for p in [&b"sk_live_"[..], b"sk_test_", b"rk_live_", b"rk_test_"] {
        if rest.starts_with(p) {
            let n = run_len(b, i + p.len(), |c| c.is_ascii_alphanumeric());
            if looks_random(&b[i + p.len()..i + p.len() + n], 20) {
                return Some(SecretKind::StripeKey);
            }
        }
    }
    if let Some(t) = after(b"hf_") {
        return looks_random(t, 30).then_some(SecretKind::HuggingFaceToken);
    }
    if let Some(t) = after(b"npm_") {
        return looks_random(t, 36).then_some(SecretKind::NpmToken);
    }
    None
}

/// `eyJ…` at `i`: three dot-separated base64url parts, the second a JSON object too.
fn is_jwt(b: &[u8], i: usize) -> bool {
    let mut lens = Vec::new();
    let mut j = i;
    for _ in 0..3 {
        let n = run_len(b, j, is_token_char);
        lens.push(n);
        j += n;
        if b.get(j) != Some(&b'.') {
            break;
        }
        j += 1;
    }
    lens.len() == 3
        && lens.iter().all(|n| *n >= 10)
        && b.get(i + lens[0] + 1..i + lens[0] + 4) == Some(b"eyJ")
}

/// A `-----BEGIN … PRIVATE KEY…-----` armour line (PEM, OpenSSH, PGP).
fn find_private_key_block(text: &str) -> Option<SecretKind> {
    const BEGIN: &str = "-----BEGIN ";
    // The label ends at the next `-----`, at the latest the next BEGIN, so each byte is
    // looked at a bounded number of times however many armour lines there are.
    text.match_indices(BEGIN).find_map(|(pos, _)| {
        let rest = &text[pos + BEGIN.len()..];
        let label = &rest[..rest.find("-----")?];
        (!label.contains('\n') && label.contains("PRIVATE KEY")).then_some(SecretKind::PrivateKey)
    })
}

/// A secret named by its field: `aws_secret_access_key = …` (every occurrence, any
/// case), Azure `AccountKey=…`, and the `secret:` line of a memdir key file.
fn find_named_secret(text: &str) -> Option<SecretKind> {
    let b = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    for (pos, name) in lower.match_indices("aws_secret_access_key") {
        // The secret itself is 40 base64 characters after the name and a separator.
        let after = &b[pos + name.len()..];
        let skip = after
            .iter()
            .take_while(|c| matches!(c, b' ' | b'=' | b':' | b'"' | b'\''))
            .count();
        if run_len(after, skip, is_base64_char) == 40 {
            return Some(SecretKind::AwsSecretKey);
        }
    }
    for name in ["AccountKey=", "SharedAccessKey="] {
        for (pos, _) in text.match_indices(name) {
            let start = pos + name.len();
            // The base64 characters before any `=` padding (which also ends the run at
            // the next `AccountKey=`, so repeated names are read once).
            let n = run_len(b, start, is_base64_char);
            if n >= 40 && looks_random(&b[start..start + n], 40) {
                return Some(SecretKind::AzureKey);
            }
        }
    }
    // A key file's secret: 32 bytes in padded standard base64 (seal.rs).
    for (pos, name) in text.match_indices("secret:") {
        if !at_word_start(b, pos) {
            continue;
        }
        let start = pos + name.len() + run_len(b, pos + name.len(), |c| c == b' ');
        if run_len(b, start, is_base64_char) == 43
            && b.get(start + 43) == Some(&b'=')
            && !b
                .get(start + 44)
                .is_some_and(|c| is_base64_char(*c) || *c == b'=')
        {
            return Some(SecretKind::MemdirKey);
        }
    }
    None
}

/// `scheme://user:password@host`: a URL carrying a password (a placeholder such as
/// `${DB_PASSWORD}`, `<password>` or `****` is not one).
fn find_url_credentials(b: &[u8]) -> Option<SecretKind> {
    let mut from = 0;
    while let Some(off) = b[from..].windows(3).position(|w| w == b"://") {
        let sep = from + off;
        from = sep + 3;
        let scheme = b[..sep]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-'))
            .count();
        if scheme == 0 || !b[sep - scheme..sep].iter().any(u8::is_ascii_alphabetic) {
            continue;
        }
        let authority = &b[from..from
            + run_len(b, from, |c| {
                !c.is_ascii_whitespace() && !matches!(c, b'/' | b'?' | b'#' | b'"' | b'\'' | b'`')
            })];
        let Some(at) = authority.iter().rposition(|c| *c == b'@') else {
            continue;
        };
        let userinfo = &authority[..at];
        let Some(colon) = userinfo.iter().position(|c| *c == b':') else {
            continue;
        };
        let password = &userinfo[colon + 1..];
        let placeholder = password.is_empty()
            || matches!(password[0], b'$' | b'<' | b'{' | b'[')
            || password.iter().all(|c| *c == b'*');
        if !placeholder {
            return Some(SecretKind::UrlCredentials);
        }
    }
    None
}

/// `https://hooks.slack.com/services/T…/B…/…` (and `/workflows/…`).
fn find_slack_webhook(text: &str) -> Option<SecretKind> {
    const HOST: &str = "hooks.slack.com/";
    text.match_indices(HOST).find_map(|(pos, _)| {
        let path = &text.as_bytes()[pos + HOST.len()..];
        let n = run_len(path, 0, |c| is_token_char(c) || c == b'/');
        let parts: Vec<&[u8]> = path[..n].split(|c| *c == b'/').collect();
        (parts.len() >= 4
            && matches!(parts[0], b"services" | b"workflows")
            && parts[1..].iter().all(|p| p.len() >= 8)
            && parts[parts.len() - 1].len() >= 20)
            .then_some(SecretKind::SlackWebhook)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, want: Option<SecretKind>) {
        assert_eq!(find_secret(text), want, "{text:?}");
    }

    #[test]
    fn finds_common_secrets() {
        use SecretKind::*;
        check("sk-proj-Ab3dEfGh1jKlMn0pQrStUvWx", Some(OpenAiKey));
        check(
            "token=sk-ant-api03-abcdefghijklmnopqrstuv",
            Some(AnthropicKey),
        );
        check(
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            Some(GitHubToken),
        );
        check(
            "github_pat_11ABCDEFG0123456789_abcdefghijkl",
            Some(GitHubToken),
        );
        check("id AKIAIOSFODNN7EXAMPLE here", Some(AwsAccessKey));
        check(
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            Some(AwsSecretKey),
        );
        check(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
            Some(PrivateKey),
        );
        check(
            "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            Some(Jwt),
        );
        check("xoxb-1234567890-abcdefghij", Some(SlackToken));
        check(
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            Some(GoogleApiKey),
        );
        check("sk_live_abcdefghijklmnopqrstuvwx0", Some(StripeKey));
    }

    #[test]
    fn ignores_ordinary_text() {
        check("the user likes sky-blue and sk-8", None);
        check("task-sk-abcdefghijklmnopqrstuvwxyz", None);
        check("ghp_short", None);
        check("AKIA is a prefix", None);
        check("eyJ alone", None);
        check("-----BEGIN PUBLIC KEY-----", None);
        check("-----BEGIN PRIVATE KEY", None);
        check("", None);
        check("ünïcödé 😀 sk-", None);
        check("://@:", None);
        check("a://b:@c", None);
        check("hooks.slack.com/", None);
        check("secret: ", None);
        check("-----BEGIN RSA\nPRIVATE KEY-----", None);
    }

    // Text repeating a prefix is still read in one pass: each occurrence must not
    // rescan the rest of the text.
    #[test]
    fn repeated_prefixes_stay_linear() {
        for unit in [
            "-----BEGIN ",
            "AccountKey=",
            "secret:",
            "://",
            "hooks.slack.com/",
        ] {
            let text = unit.repeat(200_000);
            assert_eq!(find_secret(&text), None, "{unit}");
        }
    }

    /// Every line of the corpus: `secret <kind> <text>` or `clean <text>`; `\n` in
    /// the text is a newline. Comments start with `#`.
    // spec/memory-format.md#secrets
    #[test]
    fn corpus_of_true_and_false_positives() {
        let corpus = include_str!("../../fixtures/secrets/corpus.txt");
        let mut seen = std::collections::BTreeSet::new();
        let (mut secrets, mut clean) = (0, 0);
        for (n, line) in corpus.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (label, rest) = line.split_once(' ').expect("label and text");
            let (want, text) = match label {
                "secret" => {
                    let (kind, text) = rest.split_once(' ').expect("kind and text");
                    let kind = SecretKind::ALL
                        .into_iter()
                        .find(|k| k.name() == kind)
                        .unwrap_or_else(|| panic!("corpus line {}: unknown kind {kind}", n + 1));
                    seen.insert(kind.name());
                    secrets += 1;
                    (Some(kind), text)
                }
                "clean" => {
                    clean += 1;
                    (None, rest)
                }
                _ => panic!("corpus line {}: label {label:?}", n + 1),
            };
            let text = text.replace("\\n", "\n");
            assert_eq!(find_secret(&text), want, "corpus line {}: {text:?}", n + 1);
        }
        let all: std::collections::BTreeSet<_> = SecretKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(seen, all, "every kind has a true positive in the corpus");
        assert!(
            secrets >= 40 && clean >= 30,
            "{secrets} secrets, {clean} clean"
        );
    }
}
