//! Before a download waits on the network: does the node hold the root, and
//! if not, can it find anyone who does? A Kubo node asked for a block it
//! lacks waits for it without end; when the node itself says it has the block
//! nowhere (`block/stat` offline) and its routing finds no provider
//! (`routing/findprovs`), the pull fails at once instead.

use cid::Cid;
use reqwest::Method;
use serde_json::Value;

use super::{Kubo, NAME};
use crate::provider::ProviderError;
use crate::provider::http::{Call, JSON_LIMIT, redact};

/// Kubo's `routing.QueryEventType` of an event that names providers.
const PROVIDER_EVENT: u64 = 4;

/// What the node said about the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Local {
    /// The node holds the root block.
    Held,
    /// The node answered that it does not hold the root block.
    Missing,
    /// No clear answer (no such command, a timeout, another error).
    Unknown,
}

/// What the node's routing said about providers of the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Routing {
    /// At least one provider was named.
    Found,
    /// The query finished and named none.
    NoneFound,
    /// No clear answer.
    Unknown,
}

impl Kubo {
    /// `block/stat?offline=true`: whether the node holds `root` without asking
    /// the network. Kubo answers a block it lacks with a command error
    /// ("block was not found locally (offline)").
    pub(super) async fn held_locally(&self, root: &Cid) -> Local {
        let root_s = root.to_string();
        let url = self.rpc(
            "block/stat",
            &[("arg", root_s.as_str()), ("offline", "true")],
        );
        let call = Call {
            timeout: Some(self.probe_timeout()),
            attempts: Some(1),
            ..Call::new(Method::POST, url)
        };
        match self.http.send(call, |rb| self.auth(rb)).await {
            Ok(_) => Local::Held,
            Err(ProviderError::Status {
                status: 500,
                detail,
                ..
            }) if says_not_found(&detail) => Local::Missing,
            Err(_) => Local::Unknown,
        }
    }

    /// `routing/findprovs?num-providers=1`: whether the node's routing finds
    /// anyone providing `root`. Only a query that finished is an answer.
    pub(super) async fn providers(&self, root: &Cid) -> Routing {
        let method = Method::POST;
        let root_s = root.to_string();
        let url = self.rpc(
            "routing/findprovs",
            &[("arg", root_s.as_str()), ("num-providers", "1")],
        );
        let call = Call {
            timeout: Some(self.http.cfg.transfer_timeout),
            attempts: Some(1),
            ..Call::new(method.clone(), url.clone())
        };
        let Ok(response) = self.http.send(call, |rb| self.auth(rb)).await else {
            return Routing::Unknown;
        };
        let Ok(body) = self.http.body(&method, &url, response, JSON_LIMIT).await else {
            return Routing::Unknown;
        };
        // Newline-delimited events: {"Type": 4, "Responses": [{"ID": ..}]} names
        // providers; other types are query progress.
        for line in body
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
        {
            let Ok(event) = serde_json::from_slice::<Value>(line) else {
                return Routing::Unknown;
            };
            if event["Type"].as_u64() == Some(PROVIDER_EVENT)
                && event["Responses"].as_array().is_some_and(|r| !r.is_empty())
            {
                return Routing::Found;
            }
        }
        Routing::NoneFound
    }

    /// The error for a root the node lacks and no one provides.
    pub(super) fn not_available(&self, root: &Cid) -> ProviderError {
        ProviderError::NotAvailable {
            provider: format!("{NAME} at {}", redact(&self.base)),
            cid: *root,
        }
    }

    /// The node should answer a local question quickly; never wait long.
    fn probe_timeout(&self) -> std::time::Duration {
        self.http
            .cfg
            .timeout
            .min(std::time::Duration::from_secs(10))
    }
}

/// Kubo's (and boxo's) wording for a block the node does not hold.
fn says_not_found(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    d.contains("not found") || d.contains("could not find")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubo_wording_for_a_missing_block() {
        assert!(says_not_found(
            "block was not found locally (offline): ipld: could not find bafkqaaa"
        ));
        assert!(!says_not_found("context deadline exceeded"));
    }
}
