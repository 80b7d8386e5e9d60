//! Payloads written by real Redis servers.
