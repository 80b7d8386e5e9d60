//! The differential-test driver: Skerry and the reference redis-server side by side, the
//! same commands sent to both, every reply compared byte for byte.
//!
//! Each family's test draws its own random operations; this module starts the two servers,
//! reads the run's size and seed from the environment (`SKERRY_<NAME>_DIFF_OPS`,
//! `SKERRY_<NAME>_DIFF_SEED`, so that a longer or another run needs no edit), and keeps a
//! RESP2 and, on demand, a RESP3 connection to each.

use std::fmt::Display;

use super::{resp, Raw, Server};

/// Operations of a run: `SKERRY_<name>_DIFF_OPS`, else `default_ops`.
pub fn ops(name: &str, default_ops: usize) -> usize {
    std::env::var(format!("SKERRY_{name}_DIFF_OPS"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_ops)
}

/// The run's seed: `base` plus `SKERRY_<name>_DIFF_SEED` (0 when unset), so that other runs
/// than CI's draw other operations.
pub fn seed(name: &str, base: u64) -> u64 {
    base.wrapping_add(
        std::env::var(format!("SKERRY_{name}_DIFF_SEED"))
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0),
    )
}

/// Skerry and the reference server, with a connection to each.
pub struct Diff {
    /// The reference server (`SKERRY_REDIS_SERVER`, else Debian's redis-server).
    pub reference: Server,
    /// The Skerry server.
    pub skerry: Server,
    /// RESP2 connection to the reference.
    pub re: Raw,
    /// RESP2 connection to Skerry.
    pub sk: Raw,
    /// RESP3 connections (reference, Skerry), opened by [`Diff::with_resp3`].
    resp3: Option<(Raw, Raw)>,
    /// Operations of the run ([`ops`]).
    pub ops: usize,
    /// The run's seed ([`seed`]).
    pub seed: u64,
}

/// How a [`Diff`] starts.
pub struct DiffOpts<'a> {
    /// The family's name in the environment variables (`GEO` for `SKERRY_GEO_DIFF_OPS`).
    pub name: &'a str,
    /// Arguments of both servers (Skerry-only flags are dropped for the reference).
    pub both: &'a [&'a str],
    /// Arguments of Skerry only (`--threads` and the like).
    pub skerry: &'a [&'a str],
    /// Operations when the environment does not say.
    pub default_ops: usize,
    /// Seed before the environment's addition.
    pub seed: u64,
    /// Whether the family needs Redis 8.0: with an older reference the run is skipped.
    pub needs_8: bool,
}

impl Diff {
    /// Starts both servers; None (said on stderr) when the family needs Redis 8.0 and the
    /// reference is older.
    pub fn start(o: DiffOpts<'_>) -> Option<Diff> {
        let reference = if o.needs_8 {
            Server::start_reference_8(o.both)?
        } else {
            Server::start_reference(o.both)
        };
        let mut args: Vec<&str> = o.both.to_vec();
        args.extend_from_slice(o.skerry);
        let skerry = Server::start(&args);
        let (re, sk) = (reference.raw(), skerry.raw());
        Some(Diff {
            reference,
            skerry,
            re,
            sk,
            resp3: None,
            ops: ops(o.name, o.default_ops),
            seed: seed(o.name, o.seed),
        })
    }

    /// [`Diff::start`] in the common shape: no arguments for both servers, Skerry with
    /// `--threads threads`, 3000 operations unless the environment says otherwise.
    pub fn on_threads(name: &str, threads: &str, seed: u64, needs_8: bool) -> Option<Diff> {
        Diff::start(DiffOpts {
            name,
            both: &[],
            skerry: &["--threads", threads],
            default_ops: 3000,
            seed,
            needs_8,
        })
    }

    /// Opens a RESP3 connection to each server (`HELLO 3`), for [`Diff::both_in`].
    pub fn with_resp3(mut self) -> Diff {
        let open = |s: &Server| {
            let mut r = s.raw();
            r.cmd(&["HELLO", "3"]);
            r
        };
        self.resp3 = Some((open(&self.reference), open(&self.skerry)));
        self
    }

    /// The (reference, Skerry) connections of one protocol.
    pub fn conns(&mut self, resp3: bool) -> (&mut Raw, &mut Raw) {
        if resp3 {
            let (re, sk) = self.resp3.as_mut().expect("Diff::with_resp3 first");
            (re, sk)
        } else {
            (&mut self.re, &mut self.sk)
        }
    }

    /// Sends `args` to both servers over one protocol and returns the two replies' bytes
    /// (reference, Skerry), unchecked: for replies compared some other way.
    pub fn replies<A: AsRef<[u8]>>(&mut self, args: &[A], resp3: bool) -> (Vec<u8>, Vec<u8>) {
        let msg = resp::encode(args);
        let (re, sk) = self.conns(resp3);
        re.send(&msg);
        sk.send(&msg);
        (re.read_raw(), sk.read_raw())
    }

    /// Sends `args` to both servers over RESP2 and returns the reply; panics, naming `what`,
    /// the seed and the command, when the two replies' bytes differ.
    pub fn both<A: AsRef<[u8]>>(&mut self, args: &[A], what: impl Display) -> Vec<u8> {
        self.both_in(args, false, what)
    }

    /// [`Diff::both`] over RESP3 when `resp3`.
    pub fn both_in<A: AsRef<[u8]>>(
        &mut self,
        args: &[A],
        resp3: bool,
        what: impl Display,
    ) -> Vec<u8> {
        let (a, b) = self.replies(args, resp3);
        if a != b {
            let shown: Vec<String> = args
                .iter()
                .take(8)
                .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
                .collect();
            panic!(
                "seed {} {what} (resp3 {resp3}): {shown:?}\n redis:  {:?}\n skerry: {:?}",
                self.seed,
                String::from_utf8_lossy(&a[..a.len().min(400)]),
                String::from_utf8_lossy(&b[..b.len().min(400)])
            );
        }
        a
    }
}
