//! Detection of secrets (API keys, tokens, private keys) in text about to be stored.
//!
//! memdir refuses to store a memory or timeline event that looks like it carries a
//! credential: an agent that was handed a key must not write it into a directory that
//! may be synced to a public network. This module only recognizes; it never logs or
//! returns the secret itself, only the kind. Pure code: no IO.

/// The kinds of secret memdir recognizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    OpenAiKey,
    AnthropicKey,
    GitHubToken,
    AwsAccessKey,
    AwsSecretKey,
    PrivateKey,
    Jwt,
    SlackToken,
    GoogleApiKey,
    StripeKey,
}

impl SecretKind {
    /// Human name of the kind, for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::OpenAiKey => "an OpenAI-style API key (sk-…)",
            SecretKind::AnthropicKey => "an Anthropic API key (sk-ant-…)",
            SecretKind::GitHubToken => "a GitHub token (ghp_…, github_pat_…)",
            SecretKind::AwsAccessKey => "an AWS access key id (AKIA…)",
            SecretKind::AwsSecretKey => "an AWS secret access key",
            SecretKind::PrivateKey => "a PEM private key",
            SecretKind::Jwt => "a JSON Web Token",
            SecretKind::SlackToken => "a Slack token (xox…)",
            SecretKind::GoogleApiKey => "a Google API key (AIza…)",
            SecretKind::StripeKey => "a Stripe secret key (sk_live_…)",
        }
    }
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// Length of the run of token characters starting at `i`.
fn run_len(b: &[u8], i: usize, ok: impl Fn(u8) -> bool) -> usize {
    b[i.min(b.len())..].iter().take_while(|c| ok(**c)).count()
}

/// Whether position `i` starts a word (not preceded by a token character), so that
/// `task-sk-…` inside a longer identifier is not mistaken for a key prefix.
fn at_word_start(b: &[u8], i: usize) -> bool {
    i == 0 || !is_token_char(b[i - 1])
}

/// Returns the first kind of secret found in `text`, if any.
///
/// ```
/// use memdir::memory::secrets::{find_secret, SecretKind};
/// assert_eq!(find_secret("key: sk-abcdefghijklmnopqrstuvwxyz012345"), Some(SecretKind::OpenAiKey));
/// assert_eq!(find_secret("the user likes sky-blue"), None);
/// ```
pub fn find_secret(text: &str) -> Option<SecretKind> {
    let b = text.as_bytes();
    if text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----") {
        return Some(SecretKind::PrivateKey);
    }
    for i in 0..b.len() {
        if !at_word_start(b, i) {
            continue;
        }
        let rest = &b[i..];
        if rest.starts_with(b"sk-ant-") && run_len(b, i + 7, is_token_char) >= 20 {
            return Some(SecretKind::AnthropicKey);
        }
        if rest.starts_with(b"sk-") && run_len(b, i + 3, is_token_char) >= 20 {
            return Some(SecretKind::OpenAiKey);
        }
        for p in [&b"ghp_"[..], b"gho_", b"ghu_", b"ghs_", b"ghr_"] {
            if rest.starts_with(p) && run_len(b, i + 4, |c| c.is_ascii_alphanumeric()) >= 30 {
                return Some(SecretKind::GitHubToken);
            }
        }
        if rest.starts_with(b"github_pat_") && run_len(b, i + 11, is_token_char) >= 22 {
            return Some(SecretKind::GitHubToken);
        }
        for p in [&b"AKIA"[..], b"ASIA"] {
            if rest.starts_with(p)
                && run_len(b, i + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit()) == 16
            {
                return Some(SecretKind::AwsAccessKey);
            }
        }
        if rest.starts_with(b"eyJ") {
            let parts: Vec<usize> = {
                let mut lens = Vec::new();
                let mut j = i;
                for _ in 0..3 {
                    let n = run_len(b, j, |c| {
                        c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
                    });
                    lens.push(n);
                    j += n;
                    if b.get(j) != Some(&b'.') {
                        break;
                    }
                    j += 1;
                }
                lens
            };
            if parts.len() == 3
                && parts.iter().all(|n| *n >= 10)
                && b.get(i + parts[0] + 1..i + parts[0] + 4) == Some(b"eyJ")
            {
                return Some(SecretKind::Jwt);
            }
        }
        if rest.len() > 5
            && rest.starts_with(b"xox")
            && matches!(rest[3], b'a' | b'b' | b'p' | b'r' | b's')
            && rest[4] == b'-'
            && run_len(b, i + 5, is_token_char) >= 10
        {
            return Some(SecretKind::SlackToken);
        }
        if rest.starts_with(b"AIza") && run_len(b, i + 4, is_token_char) >= 35 {
            return Some(SecretKind::GoogleApiKey);
        }
        for p in [&b"sk_live_"[..], b"rk_live_"] {
            if rest.starts_with(p) && run_len(b, i + 8, |c| c.is_ascii_alphanumeric()) >= 20 {
                return Some(SecretKind::StripeKey);
            }
        }
    }
    if let Some(pos) = text.to_ascii_lowercase().find("aws_secret_access_key") {
        // The secret itself is 40 base64 characters after the name and a separator.
        let after = &b[pos + "aws_secret_access_key".len()..];
        let skip = after
            .iter()
            .take_while(|c| matches!(c, b' ' | b'=' | b':' | b'"' | b'\''))
            .count();
        let n = run_len(after, skip, |c| {
            c.is_ascii_alphanumeric() || c == b'/' || c == b'+'
        });
        if n == 40 {
            return Some(SecretKind::AwsSecretKey);
        }
    }
    None
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
        check("sk-proj-abcdefghijklmnopqrstuvwx", Some(OpenAiKey));
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
        check("sk_live_abcdefghijklmnopqrstuvwx", Some(StripeKey));
    }

    #[test]
    fn ignores_ordinary_text() {
        check("the user likes sky-blue and sk-8", None);
        check("task-sk-abcdefghijklmnopqrstuvwxyz", None);
        check("ghp_short", None);
        check("AKIA is a prefix", None);
        check("eyJ alone", None);
        check("-----BEGIN PUBLIC KEY-----", None);
        check("", None);
        check("ünïcödé 😀 sk-", None);
    }
}
