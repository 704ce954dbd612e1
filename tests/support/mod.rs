//! Shared infrastructure for tests that talk to remote services: a loopback
//! HTTP server and client (`http`), CAR and gateway helpers (`ipfs`), and
//! mocks of the providers memdir supports (`mocks`). Every socket is on
//! 127.0.0.1 and every server stops when dropped.

#![allow(dead_code)]

pub mod http;
pub mod ipfs;
pub mod mocks;
