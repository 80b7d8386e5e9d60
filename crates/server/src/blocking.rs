//! Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP).
//!
//! A blocking command is an ordinary keyed handler that either serves at once or, finding
//! nothing to serve, asks to wait ([`crate::commands::Exec::block_on`]). The connection
//! sends every blocking command alone to the worker that owns its keys (even its own), as a
//! one-command batch carrying a [`WaitState`]. When the handler asks to wait, the owner
//! registers a [`Waiter`] here, under each of its keys, in arrival order.
//!
//! Any write of a watched key marks it ready in the keyspace. After each command (and each
//! job) the owner runs [`serve_ready`]: for every ready key holding the type the waiters want,
//! it runs the first waiter's command again, in arrival order, exactly as Redis serves
//! blocked clients right after the command that made their key ready. A waiter whose
//! command still finds nothing (the first waiter took the only element) stays in place.
//!
//! Time-outs and disconnects are decided by the connection, which waits for the reply with
//! a deadline. Who finishes a waiter is settled by one atomic state (see [`WaitState`]): the
//! connection may cancel only a waiter that is not being served, and the owner serves only
//! a waiter it claimed, so an element is never popped for a client that has gone. A
//! connection whose time runs out while the owner runs its command waits for the outcome:
//! the reply when the run served it, an empty message when it found nothing (the owner then
//! drops the waiter and the connection answers the time-out itself).

use std::collections::VecDeque;
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use compio::BufResult;

use hashbrown::HashMap;
use skerry_resp::Proto;

use crate::client::ClientInfo;
use crate::commands::{TimeoutReply, COMMANDS};
use crate::reply::Reply;
use crate::worker::Shard;

/// Not registered yet (the command is about to run, or waits for its values).
const PENDING: u8 = 0;
/// Registered on the owner, waiting for a key.
const WAITING: u8 = 1;
/// The owner is running the command again for it.
const SERVING: u8 = 2;
/// Served: the reply is on its way.
const DONE: u8 = 3;
/// Cancelled by the connection before the owner registered it.
const CANCELLED_PENDING: u8 = 4;
/// Cancelled by the connection while registered.
const CANCELLED_WAITING: u8 = 5;
/// Dropped by the owner, which found the client's socket closed (it cleaned up).
const CLOSED: u8 = 6;
/// The connection gave up while the owner was running the command for it: it waits for the
/// outcome, the reply or (nothing served) an empty message.
const SERVING_CANCELLED: u8 = 7;

/// The shared fate of one blocked command, between its connection and the owner worker.
#[derive(Debug, Default)]
pub struct WaitState(AtomicU8);

impl WaitState {
    fn cas(&self, from: u8, to: u8) -> bool {
        self.0
            .compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// The owner claims the command for its first run (PENDING -> SERVING); false when the
    /// connection cancelled it first. The claim must come before the command runs: a
    /// connection on another worker may time out at any moment, and a command that popped
    /// an element for a connection that already answered the time-out would lose it.
    pub fn claim_first_run(&self) -> bool {
        self.cas(PENDING, SERVING)
    }

    /// The owner served the command: its reply is on the way (the connection waits for it).
    pub fn served(&self) {
        self.0.store(DONE, Ordering::SeqCst);
    }

    /// The connection gives up (time-out, disconnect, kill). `Some(registered)` when it
    /// won: the owner will never serve it (`registered`: a waiter is left to clean up).
    /// None when the owner served it or is running it for it now: the connection must wait
    /// for the outcome on its channel, the reply, or an empty message when the run found
    /// nothing (then the owner dropped the waiter; see [`WaitState::unserve`]).
    pub fn cancel(&self) -> Option<bool> {
        loop {
            let from = self.0.load(Ordering::SeqCst);
            let (to, registered) = match from {
                PENDING => (CANCELLED_PENDING, Some(false)),
                WAITING => (CANCELLED_WAITING, Some(true)),
                SERVING => (SERVING_CANCELLED, None),
                CLOSED | CANCELLED_PENDING | CANCELLED_WAITING => return Some(false),
                _ => return None, // DONE or SERVING_CANCELLED: the outcome is coming.
            };
            if self.cas(from, to) {
                return registered;
            }
        }
    }

    /// The owner's run of the command found nothing for it: it waits again (SERVING ->
    /// WAITING). False when its connection gave up during the run: the owner must then
    /// drop the wait and send the connection an empty message ([`give_up`]).
    fn unserve(&self) -> bool {
        self.cas(SERVING, WAITING)
    }
}

/// A blocked command registered on the owner of its keys.
pub struct Waiter {
    db: usize,
    idx: usize,
    /// The arguments, back to back, and where each ends.
    data: Vec<u8>,
    ends: Vec<u32>,
    keys: Vec<Vec<u8>>,
    /// The value type whose appearance under a key can serve it.
    wants: u8,
    /// Served on any change of its keys, even a deletion or another type (XREADGROUP, whose
    /// group goes with its stream: it then answers the error, as Redis's
    /// `unblock_on_nokey`).
    any_change: bool,
    proto: Proto,
    tx: flume::Sender<Vec<u8>>,
    state: Arc<WaitState>,
    /// The client's socket, checked before serving: an element is never handed to a
    /// client that has closed its connection.
    fd: std::os::fd::RawFd,
    /// A wake-up of a command whose keys live on several workers (see [`Waiter::wake_up`]):
    /// not served here; the connection is told (an empty message) and runs it again.
    wake_up: bool,
    /// CLIENT ID of the blocked connection (for the slow log).
    client: u64,
}

impl Waiter {
    /// A waiter for command `idx` with `argv` in `db`, asking to wait on `keys`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        db: usize,
        idx: usize,
        argv: &[&[u8]],
        keys: Vec<Vec<u8>>,
        proto: Proto,
        tx: flume::Sender<Vec<u8>>,
        state: Arc<WaitState>,
        fd: std::os::fd::RawFd,
        client: u64,
    ) -> Waiter {
        let mut data = Vec::new();
        let mut ends = Vec::with_capacity(argv.len());
        for a in argv {
            data.extend_from_slice(a);
            ends.push(data.len() as u32);
        }
        let wants = match COMMANDS[idx].group {
            "sorted-set" => crate::coll::VALUE_TYPE_ZSET,
            "stream" => crate::coll::VALUE_TYPE_STREAM,
            _ => crate::coll::VALUE_TYPE_LIST,
        };
        let any_change = COMMANDS[idx].name == "xreadgroup";
        Waiter {
            db,
            idx,
            data,
            ends,
            keys,
            wants,
            any_change,
            proto,
            tx,
            state,
            fd,
            wake_up: false,
            client,
        }
    }

    /// A wake-up for blocking command `idx` whose keys live on several workers: registered
    /// on each owner for the keys it holds (while the connection holds them all, so no
    /// write falls in between), it sends an empty message on `tx` when one of them gets a
    /// value of the type the command waits for, and is then gone from that owner. The
    /// connection then runs the command again across the workers and, finding nothing
    /// still, registers again. Not counted in `blocked_clients` (the connection counts
    /// itself once).
    pub fn wake_up(
        db: usize,
        idx: usize,
        keys: Vec<Vec<u8>>,
        tx: flume::Sender<Vec<u8>>,
        state: Arc<WaitState>,
        fd: std::os::fd::RawFd,
    ) -> Waiter {
        let mut w = Waiter::new(db, idx, &[], keys, Proto::Resp2, tx, state, fd, 0);
        w.wake_up = true;
        w
    }

    fn argv(&self) -> Vec<&[u8]> {
        let mut out = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for &e in &self.ends {
            out.push(&self.data[start..e as usize]);
            start = e as usize;
        }
        out
    }
}

/// The blocked commands waiting on one worker's keys.
#[derive(Default)]
pub struct Registry {
    waiters: HashMap<u64, Waiter>,
    by_key: HashMap<(usize, Vec<u8>), VecDeque<u64>>,
    next_id: u64,
    serving: bool,
}

impl Registry {
    /// Number of registered waiters (cancelled ones not cleaned up yet included).
    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    /// True when nobody waits here.
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// INFO's `total_blocking_keys` and `total_blocking_keys_on_nokey` for this worker's
    /// keys: keys with a client waiting (cancelled waiters not cleaned up yet left out),
    /// and of them the keys where one waits to be served also on a deletion (XREADGROUP,
    /// Redis's `blocking_keys_unblock_on_nokey`).
    pub fn key_counts(&self) -> (usize, usize) {
        let (mut keys, mut on_nokey) = (0, 0);
        for q in self.by_key.values() {
            let live = q.iter().filter_map(|id| self.waiters.get(id)).filter(|w| {
                !matches!(
                    w.state.0.load(Ordering::SeqCst),
                    CANCELLED_WAITING | CANCELLED_PENDING | CLOSED | DONE | SERVING_CANCELLED
                )
            });
            let mut any = false;
            let mut nokey = false;
            for w in live {
                any = true;
                nokey |= w.any_change;
            }
            keys += usize::from(any);
            on_nokey += usize::from(nokey);
        }
        (keys, on_nokey)
    }
}

/// Registers `w` on `s` unless its connection cancelled meanwhile: a command claimed for
/// its first run ([`WaitState::claim_first_run`]) or a wake-up still pending. Counts it in
/// `blocked_clients`.
pub fn register(s: &mut Shard, w: Waiter) {
    if !w.state.cas(PENDING, WAITING) && !w.state.unserve() {
        // Its connection gave up: before a wake-up was registered (it waits no more), or
        // during the first run (it waits for word that nothing was served).
        if w.state.0.load(Ordering::SeqCst) == SERVING_CANCELLED {
            let _ = w.tx.send(Vec::new());
        }
        return;
    }
    if !w.wake_up {
        s.shared
            .blocked_clients
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let r = &mut s.blocking;
    let id = r.next_id;
    r.next_id += 1;
    for k in &w.keys {
        s.keyspace.watch(w.db, k);
        r.by_key.entry((w.db, k.clone())).or_default().push_back(id);
    }
    let stream = w.wants == crate::coll::VALUE_TYPE_STREAM;
    r.waiters.insert(id, w);
    if stream {
        // A stream that exists may still have nothing for the command (unlike a list or
        // a sorted set): looking again would wake a multi-worker wake-up at once, for ever.
        return;
    }
    // A key may have been written between the command's attempt and now (not possible on
    // one thread today, but cheap to cover): look again.
    for k in s.blocking.waiters[&id].keys.clone() {
        s.keyspace.mark_ready(s.blocking.waiters[&id].db, &k);
    }
    serve_ready(s);
}

/// Removes waiter `id` from every key queue.
fn forget(s: &mut Shard, id: u64) -> Option<Waiter> {
    let w = s.blocking.waiters.remove(&id)?;
    for k in &w.keys {
        s.keyspace.unwatch(w.db, k);
        let slot = (w.db, k.clone());
        if let Some(q) = s.blocking.by_key.get_mut(&slot) {
            q.retain(|&x| x != id);
            if q.is_empty() {
                s.blocking.by_key.remove(&slot);
            }
        }
    }
    Some(w)
}

/// Drops registered waiter `id`, whose connection gave up while the owner ran its command
/// again and found nothing for it ([`WaitState::unserve`]): the connection, waiting for
/// the outcome, is told by an empty message and answers the time-out itself.
fn give_up(s: &mut Shard, id: u64) {
    if let Some(w) = forget(s, id) {
        s.shared
            .blocked_clients
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let _ = w.tx.send(Vec::new());
    }
}

/// Drops the waiters whose connections cancelled them (a job the connection sends).
pub fn drop_cancelled(s: &mut Shard) {
    let gone: Vec<u64> = s
        .blocking
        .waiters
        .iter()
        .filter(|(_, w)| w.state.0.load(Ordering::SeqCst) == CANCELLED_WAITING)
        .map(|(&id, _)| id)
        .collect();
    for id in gone {
        forget(s, id);
    }
}

/// Serves the waiters of every key marked ready, in arrival order (see the module
/// documentation). Runs after every command and job on the owner, and when a transaction
/// releases it; cheap when nothing is ready. Never while a transaction (MULTI/EXEC, a
/// multi-worker command) holds the worker: its waiters are served once it is done, as in
/// Redis, by the release.
pub fn serve_ready(s: &mut Shard) {
    if s.blocking.serving || s.hold.is_some() || !s.keyspace.has_ready() {
        return;
    }
    s.blocking.serving = true;
    while let Some((db, key)) = s.keyspace.pop_ready() {
        serve_key(s, db, &key);
    }
    s.blocking.serving = false;
}

fn serve_key(s: &mut Shard, db: usize, key: &[u8]) {
    // Waiters passed over (stream waiters that still found nothing keep their place while
    // the ones behind them are tried: each waits for IDs of its own).
    let mut skip = 0;
    loop {
        let now_ms = crate::worker::unix_ms();
        let Some(&id) = s
            .blocking
            .by_key
            .get(&(db, key.to_vec()))
            .and_then(|q| q.get(skip))
        else {
            return;
        };
        let w = &s.blocking.waiters[&id];
        let stream = w.wants == crate::coll::VALUE_TYPE_STREAM;
        match s.keyspace.meta(db, key, now_ms) {
            Some(m) if m.value_type == w.wants => {}
            _ if w.any_change => {}
            _ if stream => {
                skip += 1;
                continue;
            }
            // Gone, or another type: this waiter keeps waiting (Redis 7.0); one behind it
            // may be woken by the change (an XREADGROUP behind a BLPOP on a deleted key).
            _ => {
                skip += 1;
                continue;
            }
        }
        if w.wake_up {
            // Its connection runs the command again itself (the next waiters may be
            // served meanwhile: arrival order holds among one worker's waiters only).
            let woken = w.state.cas(WAITING, DONE);
            let w = forget(s, id).expect("registered");
            if woken {
                let _ = w.tx.send(Vec::new());
            }
            continue;
        }
        // The socket stays open while the state says WAITING (the connection cancels before
        // it closes), so this peek looks at the right socket.
        if peer_closed(w.fd) && w.state.cas(WAITING, CLOSED) {
            s.shared
                .blocked_clients
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            forget(s, id);
            continue;
        }
        if !w.state.cas(WAITING, SERVING) {
            // Cancelled by its connection.
            forget(s, id);
            continue;
        }
        // Redis 8.0 runs the blocked command again as it was sent
        // (`CLIENT_REPROCESSING_COMMAND`): a command waiting on several keys pops from the
        // first of its keys that holds something, not necessarily the one that became ready.
        let argv_owned: Vec<Vec<u8>> = w.argv().iter().map(|a| a.to_vec()).collect();
        let argv: Vec<&[u8]> = argv_owned.iter().map(|a| &a[..]).collect();
        let (idx, wdb, proto) = (w.idx, w.db, w.proto);
        // The command's other keys (BLMOVE's destination) may need a device read.
        let keys: Vec<&[u8]> = COMMANDS[idx]
            .key_positions(&argv)
            .into_iter()
            .map(|p| argv[p])
            .collect();
        let mark = s.keyspace.read_mark();
        let needs = crate::commands::stream::needs_of(s, idx, &argv);
        let missing = s
            .keyspace
            .missing_need(wdb, &keys, needs.as_deref(), now_ms, mark);
        if !missing.is_empty() {
            if !s.blocking.waiters[&id].state.unserve() {
                // Its time ran out meanwhile: the next waiter is now at `skip`.
                give_up(s, id);
                continue;
            }
            let log = s.keyspace.log().clone();
            let key = key.to_vec();
            compio::runtime::spawn(async move {
                let got = crate::keyspace::fetch(log, missing).await;
                crate::worker::wait_local_unheld().await;
                let shard = crate::worker::local_shard();
                let mut s = shard.borrow_mut();
                if let Err(e) = s.keyspace.fill(got, mark) {
                    tracing::warn!("value read for a blocked command failed: {e}");
                }
                s.keyspace.mark_ready(db, &key);
                serve_ready(&mut s);
            })
            .detach();
            return;
        }
        let mut reply = Reply::new(proto);
        // Served again as a new call: its lookups are accesses (a blocked client's CLIENT
        // NO-TOUCH is not kept with its wait).
        let client = s.blocking.waiters[&id].client;
        let again =
            crate::conn::exec_keyed(s, idx, wdb, now_ms, &mut reply, &argv, client, false, false);
        let w = &s.blocking.waiters[&id];
        if again.is_some() {
            // Nothing for it after all: it keeps its place, unless its time ran out meanwhile
            // (then the next waiter is at `skip`).
            if !w.state.unserve() {
                give_up(s, id);
            } else if stream {
                skip += 1;
            }
            if stream {
                continue;
            }
            return;
        }
        w.state.0.store(DONE, Ordering::SeqCst);
        let w = forget(s, id).expect("registered");
        s.shared
            .blocked_clients
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        send_reply(s, w.tx, reply.buf);
    }
}

/// Sends a served command's reply; under `appendfsync always` only once what it wrote is
/// durable.
fn send_reply(s: &mut Shard, tx: flume::Sender<Vec<u8>>, buf: Vec<u8>) {
    let log = s.keyspace.log().clone();
    if log.durability() == skerry_store::Durability::Always {
        compio::runtime::spawn(async move {
            if let Err(e) = log.ack().await {
                tracing::error!("data file sync failed: {e}");
            }
            let _ = tx.send(buf);
        })
        .detach();
    } else {
        let _ = tx.send(buf);
    }
}

/// The time-out of blocking command `name` with `argv` in milliseconds (0 = for ever) and
/// its time-out reply; None when the argument does not parse (the handler then replies
/// with the error at once).
pub fn timeout_of(name: &str, argv: &[&[u8]]) -> Option<(u64, TimeoutReply)> {
    if name == "xread" || name == "xreadgroup" {
        // BLOCK milliseconds, before STREAMS; no BLOCK: it never waits.
        let mut i = 1;
        while i + 1 < argv.len() {
            if argv[i].eq_ignore_ascii_case(b"streams") {
                break;
            }
            if argv[i].eq_ignore_ascii_case(b"block") {
                let ms = crate::commands::parse_i64(argv[i + 1]).filter(|v| *v >= 0)?;
                return Some((ms as u64, TimeoutReply::NullArray));
            }
            i += 1;
        }
        return None;
    }
    let (arg, on_timeout) = match name {
        "blmpop" | "bzmpop" => (argv.get(1)?, TimeoutReply::NullArray),
        // Redis 7.0 answers a null array to every list and zset time-out, BLMOVE too.
        "blmove" | "brpoplpush" => (argv.last()?, TimeoutReply::NullArray),
        _ => (argv.last()?, TimeoutReply::NullArray),
    };
    let mut scratch = Reply::new(Proto::Resp2);
    let ms = crate::commands::parse_block_timeout(&mut scratch, arg)?;
    Some((ms, on_timeout))
}

/// Writes the time-out reply.
pub fn timeout_reply(reply: &mut Reply, on_timeout: TimeoutReply) {
    match on_timeout {
        TimeoutReply::NullArray => reply.null_array(),
        TimeoutReply::NullBulk => reply.null(),
    }
}

/// How a blocked connection's wait for its reply ended ([`wait_for_reply`]).
pub enum WaitEnd<T> {
    /// The reply future finished first.
    Reply(T),
    /// The deadline passed, or CLIENT UNBLOCK asked the command to end
    /// ([`ClientInfo::unblock`] says how).
    TimedOut,
    /// The client closed its connection or was killed: nobody is left to answer.
    Gone,
}

/// The period at which a wait re-checks the socket when the kernel cannot report a hang-up
/// (see [`Hangup`]).
const HANGUP_POLL_FALLBACK: Duration = Duration::from_millis(100);

/// Waits for `reply`, but no longer than `deadline`, a CLIENT UNBLOCK or KILL of `info`, or
/// its client's hang-up, whichever comes first.
///
/// A close is noticed as it happens (an io_uring poll for `POLLRDHUP` on the socket), as
/// Redis's event loop notices it, so INFO's `blocked_clients` and the key's waiters never
/// count a client that has gone: a client that closes a blocked connection and at once
/// blocks another one sees the count its own command makes.
pub async fn wait_for_reply<F: Future>(
    info: &ClientInfo,
    reply: Pin<&mut F>,
    deadline: Option<Instant>,
) -> WaitEnd<F::Output> {
    let mut reply = reply;
    let mut hangup = Some(compio::runtime::submit(Hangup { fd: info.fd }));
    let mut fallback: Option<Pin<Box<dyn Future<Output = ()>>>> = None;
    let mut timer = deadline.map(|d| Box::pin(compio::time::sleep_until(d)));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = reply.as_mut().poll(cx) {
            return Poll::Ready(WaitEnd::Reply(v));
        }
        if info.killed.get() {
            return Poll::Ready(WaitEnd::Gone);
        }
        if info.unblock.get() != 0 {
            return Poll::Ready(WaitEnd::TimedOut);
        }
        *info.blocked_waker.borrow_mut() = Some(cx.waker().clone());
        if let Some(h) = hangup.as_mut() {
            match Pin::new(h).poll(cx) {
                // POLLRDHUP, or POLLHUP / POLLERR / POLLNVAL, which poll always reports.
                Poll::Ready(BufResult(Ok(_), _)) => return Poll::Ready(WaitEnd::Gone),
                Poll::Ready(BufResult(Err(e), _)) => {
                    tracing::debug!("hang-up poll failed ({e}); checking the socket by time");
                    hangup = None;
                }
                Poll::Pending => {}
            }
        }
        if hangup.is_none() {
            loop {
                let tick = fallback
                    .get_or_insert_with(|| Box::pin(compio::time::sleep(HANGUP_POLL_FALLBACK)));
                if tick.as_mut().poll(cx).is_pending() {
                    break;
                }
                fallback = None;
                if peer_closed(info.fd) {
                    return Poll::Ready(WaitEnd::Gone);
                }
            }
        }
        if let Some(t) = timer.as_mut() {
            if t.as_mut().poll(cx).is_ready() {
                return Poll::Ready(WaitEnd::TimedOut);
            }
        }
        Poll::Pending
    })
    .await
}

/// An io_uring poll that completes when the peer of socket `fd` hangs up (`POLLRDHUP`) or
/// the socket fails or is shut down (`POLLHUP`, `POLLERR`), but not when data arrives: a
/// blocked client may pipeline further commands, which wait in the socket until its
/// command ends. Dropping the wait cancels the poll.
struct Hangup {
    fd: RawFd,
}

// SAFETY: the entry names only the descriptor, no memory: the kernel takes its own reference
// to the socket when the poll is armed, so the poll stays sound if the connection closes
// the descriptor while it is in flight (the completion then carries an error or a hang-up).
unsafe impl compio::driver::OpCode for Hangup {
    type Control = ();

    fn create_entry(&mut self, _: &mut Self::Control) -> compio::driver::OpEntry {
        let mask = (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) as u32;
        io_uring::opcode::PollAdd::new(io_uring::types::Fd(self.fd), mask)
            .build()
            .into()
    }
}

/// True when the peer of socket `fd` has closed its end (a zero-byte peek), for a
/// connection waiting in a blocking command, which does not read meanwhile.
pub fn peer_closed(fd: std::os::fd::RawFd) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: `fd` is the connection's open socket (the connection is alive while it
    // waits); recv writes at most 1 byte into `b`, which outlives the call; MSG_PEEK leaves
    // the data in the socket and MSG_DONTWAIT never blocks.
    let n = unsafe {
        libc::recv(
            fd,
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n == 0 {
        return true;
    }
    if n < 0 {
        let err = std::io::Error::last_os_error().raw_os_error();
        return !matches!(err, Some(libc::EAGAIN) | Some(libc::EINTR));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_and_serve_never_both_win() {
        let s = WaitState::default();
        assert_eq!(s.cancel(), Some(false), "cancelled before registration");
        assert!(!s.claim_first_run(), "owner no longer runs it");
        assert!(!s.cas(PENDING, WAITING), "nor registers it");

        // The owner claims the first run before running it: a time-out in the middle of
        // the run waits for its reply (the run may pop an element for it).
        let s = WaitState::default();
        assert!(s.claim_first_run());
        assert_eq!(
            s.cancel(),
            None,
            "connection must wait for the first run's outcome"
        );
        s.served();
        assert_eq!(s.cancel(), None, "served: the reply is coming");
        let s = WaitState::default();
        assert!(s.claim_first_run());
        assert!(
            s.cas(SERVING, WAITING),
            "first run found nothing: registered"
        );
        assert_eq!(s.cancel(), Some(true), "now a time-out wins");

        let s = WaitState::default();
        assert!(s.cas(PENDING, WAITING));
        assert!(s.cas(WAITING, SERVING), "owner claims it");
        assert!(s.unserve(), "nothing to serve after all: it waits again");
        assert_eq!(s.cancel(), Some(true), "now the connection wins");
        assert!(!s.cas(WAITING, SERVING), "and the owner cannot serve it");

        // A time-out during a run that then finds nothing: the connection waits for word,
        // and the owner, unable to put the waiter back, must tell it (an empty message).
        let s = WaitState::default();
        assert!(s.cas(PENDING, WAITING));
        assert!(s.cas(WAITING, SERVING), "owner claims it");
        assert_eq!(s.cancel(), None, "connection must wait for the outcome");
        assert_eq!(s.cancel(), None, "and keeps waiting when asked again");
        assert!(!s.unserve(), "owner cannot put it back to waiting");
        assert_eq!(s.0.load(Ordering::SeqCst), SERVING_CANCELLED);
        // The same during a first run.
        let s = WaitState::default();
        assert!(s.claim_first_run());
        assert_eq!(s.cancel(), None);
        assert!(!s.unserve(), "the first run cannot register it");
        s.served();
        assert_eq!(s.cancel(), None, "served after all: the reply is coming");

        let s = WaitState::default();
        assert!(s.cas(PENDING, WAITING));
        assert!(s.cas(WAITING, CLOSED), "owner saw the socket closed");
        assert_eq!(
            s.cancel(),
            Some(false),
            "connection stops waiting, nothing to clean"
        );
    }

    #[test]
    fn timeouts_parse_like_redis() {
        let a: Vec<&[u8]> = vec![b"blpop", b"k", b"1.5"];
        assert_eq!(
            timeout_of("blpop", &a),
            Some((1500, TimeoutReply::NullArray))
        );
        let a: Vec<&[u8]> = vec![b"blmove", b"a", b"b", b"left", b"right", b"0"];
        assert_eq!(timeout_of("blmove", &a), Some((0, TimeoutReply::NullArray)));
        let a: Vec<&[u8]> = vec![b"blmpop", b"0.01", b"1", b"k", b"left"];
        assert_eq!(
            timeout_of("blmpop", &a),
            Some((10, TimeoutReply::NullArray))
        );
        let a: Vec<&[u8]> = vec![b"blpop", b"k", b"-1"];
        assert_eq!(timeout_of("blpop", &a), None);
        let a: Vec<&[u8]> = vec![b"blpop", b"k", b"abc"];
        assert_eq!(timeout_of("blpop", &a), None);
    }
}
