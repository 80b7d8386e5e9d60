//! Hops: keyed commands a connection sends to the workers owning their keys.
//!
//! A connection queues the commands of one read (a loop turn) per owning worker, runs its
//! own worker's commands inline at once, and sends each other worker **one** batch at the
//! end of the turn (or earlier, at a barrier: a command that is not a single-worker keyed
//! command). Every batch of the turn is in flight at the same time, and the connection's
//! own group commit runs while they are: under `appendfsync always` each owner replies
//! once its log is durable, which is one fdatasync per worker per turn shared by every
//! batch and local command that wrote meanwhile (decision 0017).
//!
//! Commands for one worker run there in the order sent; commands of one pipeline on
//! different workers may apply in another order than sent (as Dragonfly's pipeline
//! squashing), but their replies go out in the order of the commands: each queued run of
//! commands leaves a *hole* at its place in the reply buffer, filled when the batch's
//! replies come back.

use std::sync::Arc;

use skerry_resp::Proto;
use smallvec::SmallVec;

use crate::commands;
use crate::conn::{exec_failed, exec_keyed, key_args, Argv};
use crate::keyspace::PREFETCH_MAX_KEYS;
use crate::reply::Reply;
use crate::worker::{local_shard, wait_local_unheld, Shard, Work};

/// Keyed commands waiting to go to another worker in one message, and, once they ran there,
/// their replies: a batch goes to its owner and comes back whole, so its buffers are
/// allocated, reused and freed on the connection's own worker ([`Pending::take`]) and a
/// hop allocates nothing once the worker has run a few turns.
#[derive(Default)]
pub struct Pending {
    pub(crate) worker: usize,
    /// CLIENT ID of the connection whose commands these are (for the slow log).
    pub(crate) client: u64,
    /// Arguments of every command, back to back.
    pub(crate) data: Vec<u8>,
    /// (command index, database, argument end offsets into `data`).
    pub(crate) cmds: Vec<(usize, usize, SmallVec<[u32; 8]>)>,
    /// Every command's reply, back to back (filled by the owner).
    reply: Vec<u8>,
    /// End offset in `reply` of each command's reply.
    ends: Vec<u32>,
}

/// Batches kept per worker for reuse.
const POOL_MAX: usize = 64;
/// A batch whose argument or reply buffer grew past this is freed rather than kept.
const POOL_KEEP_MAX_BYTES: usize = 256 * 1024;

thread_local! {
    /// Empty batches of this worker's connections, for reuse.
    static POOL: std::cell::RefCell<Vec<Pending>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Pending {
    /// An empty batch for worker `worker`, reused from this worker's pool when one is free.
    pub(crate) fn take(worker: usize) -> Pending {
        match POOL.with_borrow_mut(|p| p.pop()) {
            Some(mut p) => {
                p.worker = worker;
                p
            }
            None => Pending {
                worker,
                ..Pending::default()
            },
        }
    }

    /// Gives a batch whose replies were taken back to this worker's pool (emptied), or frees
    /// it when it grew large or enough are kept.
    fn recycle(mut self) {
        if self.data.capacity() > POOL_KEEP_MAX_BYTES || self.reply.capacity() > POOL_KEEP_MAX_BYTES
        {
            return;
        }
        self.data.clear();
        self.cmds.clear();
        self.reply.clear();
        self.ends.clear();
        POOL.with_borrow_mut(|p| {
            if p.len() < POOL_MAX {
                p.push(self);
            }
        });
    }

    /// Appends command `idx` of database `db` with its arguments.
    pub(crate) fn push(&mut self, idx: usize, db: usize, argv: &[&[u8]]) {
        let mut ends = SmallVec::new();
        for a in argv {
            self.data.extend_from_slice(a);
            ends.push(self.data.len() as u32);
        }
        self.cmds.push((idx, db, ends));
    }
}

/// Frees the batches kept for reuse (a worker that went idle).
pub(crate) fn free_pool() {
    POOL.with_borrow_mut(|p| *p = Vec::new());
}

/// Where a batch's replies go.
pub enum ReplyTo {
    /// A blocking command sent alone: its reply (see `crate::blocking`).
    One(flume::Sender<Vec<u8>>),
    /// A batch of a turn: the batch itself, with its replies and where each ends, back to
    /// connection `client` on worker `from`.
    Turn { client: u64, from: usize },
}

/// The job that runs `p` on its worker and sends the reply of the blocking command it
/// holds (alone) on `tx`, with the client's wait state and socket.
pub(crate) fn blocking_job(
    p: Pending,
    proto: Proto,
    now_ms: i64,
    no_touch: bool,
    tx: flume::Sender<Vec<u8>>,
    wait: (Arc<crate::blocking::WaitState>, std::os::fd::RawFd),
) -> crate::worker::Job {
    Box::new(move |s: &mut Shard| {
        HopWork::Batch {
            p,
            proto,
            now_ms,
            no_touch,
            tx: ReplyTo::One(tx),
            wait: Some(wait),
        }
        .run(s)
    })
}

/// A hop, as a worker receives it.
pub enum HopWork {
    /// Commands to run here, and where their replies go.
    Batch {
        p: Pending,
        proto: Proto,
        now_ms: i64,
        /// The client is in CLIENT NO-TOUCH.
        no_touch: bool,
        tx: ReplyTo,
        wait: Option<(Arc<crate::blocking::WaitState>, std::os::fd::RawFd)>,
    },
    /// A batch of connection `client` of this worker, back with its replies.
    Returned { client: u64, batch: Pending },
}

impl HopWork {
    /// Does it, on the worker it was sent to.
    pub(crate) fn run(self, s: &mut Shard) {
        match self {
            HopWork::Batch {
                mut p,
                proto,
                now_ms,
                no_touch,
                tx,
                wait,
            } => {
                let buf = std::mem::take(&mut p.reply);
                let ends = std::mem::take(&mut p.ends);
                let b = Batch {
                    p,
                    next: 0,
                    start: 0,
                    reply: Reply { buf, proto },
                    ends,
                    now_ms,
                    no_touch,
                    tx,
                    mark: None,
                    wait,
                    wrote: false,
                    prefetched: 0,
                };
                run_batch(s, b);
            }
            HopWork::Returned { client, batch } => deliver(client, batch),
        }
    }
}

/// Keyed commands forwarded to their owner in one message, run there in order.
struct Batch {
    p: Pending,
    /// Next command to run, and where its arguments start in `p.data`.
    next: usize,
    start: usize,
    reply: Reply,
    /// End of each finished command's reply in `reply.buf` (turn batches only).
    ends: Vec<u32>,
    now_ms: i64,
    /// The client is in CLIENT NO-TOUCH.
    no_touch: bool,
    tx: ReplyTo,
    /// Read-buffer mark of the command waiting for its values (see `Keyspace::read_mark`).
    mark: Option<u64>,
    /// Set for a blocking command sent alone (see `crate::blocking`), with the client's
    /// socket.
    wait: Option<(Arc<crate::blocking::WaitState>, std::os::fd::RawFd)>,
    /// A command of the batch appended to the owner's log.
    wrote: bool,
    /// Commands before this index had their keys prefetched ([`prefetch_batch`]).
    prefetched: usize,
}

impl Batch {
    /// The command just run (or failed) is done.
    fn finished(&mut self, start: usize) {
        self.start = start;
        self.next += 1;
        self.mark = None;
        if let ReplyTo::Turn { .. } = self.tx {
            self.ends.push(self.reply.buf.len() as u32);
        }
    }
}

/// Brings the keys of `b`'s next commands (up to [`PREFETCH_MAX_KEYS`], those of the first
/// one's database) into the CPU cache together, as a connection does for its own pipeline
/// (`crate::prefetch`): a forwarded batch's lookups then overlap instead of each waiting
/// for its own cache misses. Returns the index of the first command not looked at.
fn prefetch_batch(s: &Shard, b: &Batch) -> usize {
    let cmds = &b.p.cmds[b.next..];
    let Some(&(_, db, _)) = cmds.first() else {
        return b.next;
    };
    let mut keys: [(&[u8], bool); PREFETCH_MAX_KEYS] = [(&[], false); PREFETCH_MAX_KEYS];
    let (mut n, mut looked) = (0, 0);
    for (idx, cmd_db, ends) in cmds.iter().take(PREFETCH_MAX_KEYS) {
        looked += 1;
        if *cmd_db != db || ends.len() < 2 {
            continue;
        }
        if let Some(reads) = crate::prefetch::first_key_reads(*idx) {
            // Argument ends are offsets into `data`: the key follows the command name.
            keys[n] = (&b.p.data[ends[0] as usize..ends[1] as usize], reads);
            n += 1;
        }
    }
    if n >= 2 {
        s.keyspace.prefetch(db, &keys[..n]);
    }
    b.next + looked
}

/// True when command `idx` may leave its collection behind, the one left behind is its
/// key's, and it needs no more of it than is in RAM, so that the residency check (which
/// would write it) can be skipped (decision 0035). A list, hash or set is always whole in
/// RAM; a big stream may be partial, and a trimming XADD needs its head pages.
pub(crate) fn leaves_behind(s: &Shard, idx: usize, db: usize, argv: &[&[u8]]) -> bool {
    let spec = &commands::COMMANDS[idx];
    if !matches!(spec.handler, commands::Handler::Keyed { behind: true, .. })
        || argv.len() < 2
        || !s.keyspace.holds_behind(db, argv[1])
    {
        return false;
    }
    spec.group != "stream"
        || commands::stream::needs_of(s, idx, argv).is_some_and(|needs| {
            needs
                .iter()
                .all(|n| matches!(n, crate::coll::stream::Need::Skeleton))
        })
}

/// Runs the rest of `b` on the owner. A command whose values are not resident suspends the
/// batch: its values are read together, then the batch continues (after any transaction
/// that took the worker meanwhile), so the owner never blocks on the device.
fn run_batch(s: &mut Shard, mut b: Batch) {
    while b.next < b.p.cmds.len() {
        if b.next >= b.prefetched {
            b.prefetched = prefetch_batch(s, &b);
        }
        let missing = {
            let (idx, db, ref ends) = b.p.cmds[b.next];
            let mut argv: Argv = SmallVec::new();
            let mut start = b.start;
            for &e in ends {
                argv.push(&b.p.data[start..e as usize]);
                start = e as usize;
            }
            let missing = if commands::reads_values(idx, &argv)
                && !(b.wait.is_none() && leaves_behind(s, idx, db, &argv))
            {
                let mark = *b.mark.get_or_insert_with(|| s.keyspace.read_mark());
                let needs = commands::stream::needs_of(s, idx, &argv);
                s.keyspace
                    .missing_need(db, &key_args(idx, &argv), needs.as_deref(), b.now_ms, mark)
            } else {
                crate::keyspace::Locations::new()
            };
            if missing.is_empty() {
                if let Some((wait, _)) = &b.wait {
                    if !wait.claim_first_run() {
                        // Its connection gave up (timed out, unblocked, went away) first.
                        return;
                    }
                }
                let writes = s.keyspace.writes();
                let asks_to_wait = exec_keyed(
                    s,
                    idx,
                    db,
                    b.now_ms,
                    &mut b.reply,
                    &argv,
                    b.p.client,
                    b.no_touch,
                    b.wait.is_none(),
                );
                b.wrote |= s.keyspace.writes() != writes;
                if asks_to_wait.is_none() {
                    if let Some((wait, _)) = &b.wait {
                        wait.served();
                    }
                }
                if let Some(req) = asks_to_wait {
                    match (b.wait.take(), b.tx) {
                        (Some((state, fd)), ReplyTo::One(tx)) => {
                            let again: Option<Vec<&[u8]>> = req
                                .argv
                                .as_ref()
                                .map(|v| v.iter().map(|a| &a[..]).collect());
                            let w = crate::blocking::Waiter::new(
                                db,
                                idx,
                                again.as_deref().unwrap_or(&argv),
                                req.keys,
                                b.reply.proto,
                                tx,
                                state,
                                fd,
                                b.p.client,
                            );
                            crate::blocking::register(s, w);
                            return;
                        }
                        // Not sent as a blocking command: answer as if the time ran out.
                        (wait, tx) => {
                            b.wait = wait;
                            b.tx = tx;
                            crate::blocking::timeout_reply(&mut b.reply, req.on_timeout)
                        }
                    }
                }
                drop(argv);
                b.finished(start);
            }
            missing
        };
        if !missing.is_empty() {
            let log = s.keyspace.log().clone();
            compio::runtime::spawn(async move {
                let got = crate::keyspace::fetch(log, missing).await;
                wait_local_unheld().await;
                let shard = local_shard();
                let mut s = shard.borrow_mut();
                let mark = b.mark.unwrap_or(0);
                if let Err(e) = s.keyspace.fill(got, mark) {
                    let (idx, _, ref ends) = b.p.cmds[b.next];
                    let start = ends.last().map_or(b.start, |&e| e as usize);
                    exec_failed(&mut s, idx, &mut b.reply, &e);
                    b.finished(start);
                }
                run_batch(&mut s, b);
            })
            .detach();
            return;
        }
    }
    // Under `appendfsync always` the owner answers only once what the batch wrote is durable
    // (group commit on the owner's log: every batch and local command that wrote before the
    // commit starts shares its fdatasync).
    let (log, w) = (s.keyspace.log(), s.id);
    if b.wrote && log.durability() == skerry_store::Durability::Always {
        let log = log.clone();
        compio::runtime::spawn(async move {
            if let Err(e) = log.ack().await {
                tracing::error!("data file sync failed: {e}");
            }
            b.answer(w);
        })
        .detach();
    } else {
        b.answer(w);
    }
}

impl Batch {
    /// Sends the replies back to the connection.
    fn answer(self, worker: usize) {
        match self.tx {
            ReplyTo::One(tx) => {
                let _ = tx.send(self.reply.buf);
            }
            ReplyTo::Turn { client, from } => {
                let mut reply = self.p;
                debug_assert_eq!(reply.worker, worker, "a batch answered by another worker");
                reply.reply = self.reply.buf;
                reply.ends = self.ends;
                // With the other replies of this turn for `from`; handed to the connection on
                // its own thread (a local wake-up).
                crate::worker::post(
                    from,
                    true,
                    Work::Hop(HopWork::Returned {
                        client,
                        batch: reply,
                    }),
                );
            }
        }
    }
}

/// Where the batches of a connection come back to, on its worker.
#[derive(Default)]
struct Returned {
    /// Batches back with their replies, not yet taken by [`Hops::gather`].
    got: SmallVec<[Pending; 4]>,
    /// The connection's task, waiting in [`Hops::gather`].
    waker: Option<std::task::Waker>,
}

thread_local! {
    /// Per connection of this worker that has batches in flight (by client id): the
    /// batches back. A map on the worker's own thread: a reply costs no channel and no
    /// allocation.
    static RETURNED: std::cell::RefCell<foldhash::HashMap<u64, Returned>> =
        std::cell::RefCell::new(foldhash::HashMap::default());
}

/// Hands a batch back to connection `client` of this worker (dropped when the connection
/// went away meanwhile).
fn deliver(client: u64, batch: Pending) {
    RETURNED.with_borrow_mut(|r| {
        if let Some(slot) = r.get_mut(&client) {
            slot.got.push(batch);
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
        }
    })
}

/// A run of consecutive queued commands for one worker, and where their replies go in the
/// connection's reply buffer.
struct Hole {
    /// Offset in the reply buffer.
    at: usize,
    worker: usize,
    cmds: u32,
}

/// The keyed commands of one connection's turn that run on other workers.
#[derive(Default)]
pub struct Hops {
    /// Queued, not yet sent: one batch per worker.
    queued: Vec<Pending>,
    /// Bytes of arguments queued.
    queued_bytes: usize,
    /// Batches sent whose replies have not come back.
    in_flight: usize,
    /// Where the replies of queued and sent commands go, in command order.
    holes: Vec<Hole>,
    /// The connection's client id, once it has a slot in `RETURNED` (its first hop).
    client: Option<u64>,
}

impl Drop for Hops {
    fn drop(&mut self) {
        if let Some(client) = self.client {
            RETURNED.with_borrow_mut(|r| r.remove(&client));
        }
    }
}

impl Hops {
    /// Nothing queued or in flight.
    pub fn is_empty(&self) -> bool {
        self.holes.is_empty()
    }

    /// Queues keyed command `idx` (database `db`) for worker `w`; its reply goes at offset
    /// `at` of the reply buffer (its end now). Returns the bytes of arguments queued.
    pub fn queue(&mut self, w: usize, idx: usize, db: usize, argv: &[&[u8]], at: usize) -> usize {
        match self.holes.last_mut() {
            Some(h) if h.worker == w && h.at == at => h.cmds += 1,
            _ => self.holes.push(Hole {
                at,
                worker: w,
                cmds: 1,
            }),
        }
        let i = match self.queued.iter().position(|p| p.worker == w) {
            Some(i) => i,
            None => {
                self.queued.push(Pending::take(w));
                self.queued.len() - 1
            }
        };
        let p = &mut self.queued[i];
        let before = p.data.len();
        p.push(idx, db, argv);
        self.queued_bytes += p.data.len() - before;
        self.queued_bytes
    }

    /// Sends every queued batch to its worker (they run in parallel); their replies are
    /// taken by [`Hops::gather`].
    pub fn send(&mut self, me: usize, client: u64, proto: Proto, now_ms: i64, no_touch: bool) {
        if self.queued.is_empty() {
            return;
        }
        if self.client.is_none() {
            RETURNED.with_borrow_mut(|r| {
                r.entry(client).or_default();
            });
            self.client = Some(client);
        }
        for mut p in self.queued.drain(..) {
            p.client = client;
            let w = p.worker;
            let to = ReplyTo::Turn { client, from: me };
            // With the other batches of this turn for `w` (all connections), in one message.
            let batch = HopWork::Batch {
                p,
                proto,
                now_ms,
                no_touch,
                tx: to,
                wait: None,
            };
            crate::worker::post(w, false, Work::Hop(batch));
            self.in_flight += 1;
        }
        self.queued_bytes = 0;
    }

    /// Waits for the replies of every sent batch and puts each command's reply in its
    /// place in `reply` (whose bytes after each hole are the replies of the commands run
    /// locally meanwhile).
    pub async fn gather(&mut self, reply: &mut Vec<u8>) {
        debug_assert!(self.queued.is_empty(), "gather before send");
        if self.in_flight == 0 {
            return;
        }
        let client = self.client.expect("sent");
        let mut got: SmallVec<[Pending; 4]> = SmallVec::new();
        std::future::poll_fn(|cx| {
            RETURNED.with_borrow_mut(|r| {
                let slot = r.get_mut(&client).expect("a connection's slot");
                self.in_flight -= slot.got.len();
                got.extend(slot.got.drain(..));
                if self.in_flight == 0 {
                    std::task::Poll::Ready(())
                } else {
                    slot.waker = Some(cx.waker().clone());
                    std::task::Poll::Pending
                }
            })
        })
        .await;
        let holes = &self.holes;
        if let ([h], [r]) = (&holes[..], &got[..]) {
            if h.at == reply.len() {
                // Only forwarded commands since the last gather: append.
                reply.extend_from_slice(&r.reply);
                got.into_iter().for_each(Pending::recycle);
                self.holes.clear();
                return;
            }
        }
        let total: usize = got.iter().map(|r| r.reply.len()).sum();
        let old = std::mem::take(reply);
        let mut out = crate::netbuf::take();
        out.reserve(old.len() + total);
        // Per batch: commands and bytes taken so far.
        let mut taken: SmallVec<[(usize, usize); 4]> = got.iter().map(|_| (0, 0)).collect();
        let mut pos = 0;
        for h in holes {
            out.extend_from_slice(&old[pos..h.at]);
            pos = h.at;
            let i = got
                .iter()
                .position(|r| r.worker == h.worker)
                .expect("a reply from every worker sent a batch");
            let r = &got[i];
            let (cmds, from) = taken[i];
            let cmds = cmds + h.cmds as usize;
            let to = r.ends[cmds - 1] as usize;
            out.extend_from_slice(&r.reply[from..to]);
            taken[i] = (cmds, to);
        }
        out.extend_from_slice(&old[pos..]);
        *reply = out;
        crate::netbuf::give(old);
        got.into_iter().for_each(Pending::recycle);
        self.holes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_come_back_empty_and_big_ones_are_freed() {
        free_pool();
        let mut p = Pending::take(1);
        p.push(3, 0, &[b"SET", b"k", b"v"]);
        p.reply.extend_from_slice(b"+OK\r\n");
        p.ends.push(5);
        let data_ptr = p.data.as_ptr();
        p.recycle();
        // Reused, emptied, for whichever worker asks next.
        let q = Pending::take(2);
        assert_eq!(q.worker, 2);
        assert!(q.data.is_empty() && q.cmds.is_empty() && q.reply.is_empty() && q.ends.is_empty());
        assert_eq!(q.data.as_ptr(), data_ptr, "the same buffer");
        // A batch that grew past the bound is not kept.
        let mut big = q;
        big.reply.reserve(POOL_KEEP_MAX_BYTES + 1);
        big.recycle();
        assert!(POOL.with_borrow(|p| p.is_empty()));
        // The pool holds at most POOL_MAX, and an idle worker frees it.
        for _ in 0..POOL_MAX + 5 {
            Pending {
                data: Vec::with_capacity(16),
                ..Pending::default()
            }
            .recycle();
        }
        assert_eq!(POOL.with_borrow(|p| p.len()), POOL_MAX);
        free_pool();
        assert!(POOL.with_borrow(|p| p.is_empty()));
    }
}
