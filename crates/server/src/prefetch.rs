//! Prefetching a pipeline's keys: when a read brings several commands, the index entries
//! (and cached values) of the next few are brought into the CPU cache together before
//! the first of them runs, so that their memory loads overlap instead of each command
//! waiting for its own, one after the other (docs/decisions/0020-cpu-per-command.md).
//!
//! A window of up to [`PREFETCH_MAX_KEYS`] commands is parsed ahead with a scratch parser
//! of the worker's; the first key of each keyed command this worker owns is handed to
//! [`Keyspace::prefetch`](crate::keyspace::Keyspace::prefetch), with whether the command
//! reads the value (a SET's old value is not worth bringing in). Nothing here changes
//! any state: a wrong guess (a SELECT in the window, an inline command) costs only the
//! look-ahead.

use std::cell::RefCell;

use skerry_resp::{Limits, Parsed, RequestParser};

use crate::commands::{self, Handler, COMMANDS};
use crate::keyspace::PREFETCH_MAX_KEYS;

thread_local! {
    static SCRATCH: RefCell<RequestParser> = RefCell::new(RequestParser::new());
}

/// For command `idx` (of the command table) whose first argument is its key, whether it
/// reads that key's value (worth prefetching too); `None` for a command that is not keyed
/// by its first argument. What a connection's window and a forwarded batch
/// (`crate::hop`) prefetch.
pub fn first_key_reads(idx: usize) -> Option<bool> {
    let spec = &COMMANDS[idx];
    (matches!(spec.handler, Handler::Keyed { .. }) && spec.first_key == 1)
        .then(|| commands::reads_values_always(idx))
}

/// The commands a [`window`] parsed, kept so that the connection does not parse them
/// (nor look their names up) a second time: each with its offset in the connection's
/// bytes, its length, its command index and its argument ranges. Valid while the bytes
/// stay where they were and the parse limits are the same; the connection clears it when
/// it moves its bytes.
#[derive(Default)]
pub struct Lookahead {
    /// (offset, bytes, command index, first of its ranges in `ranges`, its ranges' end),
    /// in offset order; those before `next` were taken.
    cmds: Vec<(usize, usize, Option<usize>, usize, usize)>,
    /// The argument ranges of every kept command, from each command's first byte.
    ranges: Vec<(usize, usize)>,
    next: usize,
    /// The limits the commands were parsed under.
    limits: Option<Limits>,
}

impl Lookahead {
    /// Forgets every kept command (the bytes moved, or a new read starts).
    pub fn clear(&mut self) {
        self.cmds.clear();
        self.ranges.clear();
        self.next = 0;
        self.limits = None;
    }

    /// When the command at `offset` was kept (parsed under `limits`): makes it `parser`'s
    /// last complete request and returns its length and command index (None: not a
    /// command Skerry knows).
    #[inline]
    pub fn take(
        &mut self,
        offset: usize,
        limits: &Limits,
        parser: &mut RequestParser,
    ) -> Option<(usize, Option<usize>)> {
        let &(at, len, idx, r0, r1) = self.cmds.get(self.next)?;
        if at != offset || self.limits.as_ref() != Some(limits) {
            return None;
        }
        self.next += 1;
        parser.set_complete(self.ranges[r0..r1].iter().copied());
        Some((len, idx))
    }
}

/// Looks at the commands at the start of `data` (up to [`PREFETCH_MAX_KEYS`] complete
/// ones) and prefetches their keys in database `db` of worker `worker` (of `workers`).
/// The multibulk commands parsed are kept in `ahead` (`offset`: where `data` starts in
/// the connection's bytes). Returns the bytes of the commands looked at: the caller
/// prefetches again once it has run past them.
#[allow(clippy::too_many_arguments)]
pub fn window(
    data: &[u8],
    offset: usize,
    db: usize,
    worker: usize,
    workers: usize,
    limits: &Limits,
    ahead: &mut Lookahead,
) -> usize {
    SCRATCH.with(|p| {
        let mut p = p.borrow_mut();
        p.reset();
        ahead.clear();
        ahead.limits = Some(*limits);
        let mut at = 0;
        let mut keys: [(&[u8], bool); PREFETCH_MAX_KEYS] = [(&[], false); PREFETCH_MAX_KEYS];
        let mut n = 0;
        // Key ranges are kept as offsets (the parser's arguments borrow it), with whether
        // the command reads the value.
        let mut ranges = [(0usize, 0usize, false); PREFETCH_MAX_KEYS];
        for _ in 0..PREFETCH_MAX_KEYS {
            let Ok(Parsed::Complete { consumed }) = p.parse(&data[at..], limits) else {
                break;
            };
            let cmd = &data[at..at + consumed];
            if let (Some(args), true) = (p.arg_ranges(), p.argc() > 0) {
                let idx = commands::lookup(p.arg(cmd, 0));
                let r0 = ahead.ranges.len();
                ahead.ranges.extend_from_slice(args);
                ahead
                    .cmds
                    .push((offset + at, consumed, idx, r0, ahead.ranges.len()));
                if let Some(reads) = idx.filter(|_| p.argc() >= 2).and_then(first_key_reads) {
                    let key = p.arg(cmd, 1);
                    // The key of the command before, again (a hot key, a counter): brought
                    // in once is enough.
                    let again = n > 0 && {
                        let (s, e, r) = ranges[n - 1];
                        r == reads && &data[s..e] == key
                    };
                    if !again && crate::slot::owner(key, workers) == worker {
                        // The argument lies inside `cmd` (a multibulk request).
                        let start = key.as_ptr() as usize - data.as_ptr() as usize;
                        ranges[n] = (start, start + key.len(), reads);
                        n += 1;
                    }
                }
            }
            at += consumed;
        }
        p.reset();
        if n >= 2 {
            for (k, &(s, e, reads)) in keys.iter_mut().zip(&ranges[..n]) {
                *k = (&data[s..e], reads);
            }
            let shard = crate::worker::local_shard();
            shard.borrow().keyspace.prefetch(db, &keys[..n]);
        }
        at
    })
}
