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
use crate::worker::{local_shard, wait_local_unheld, Shard};

/// Keyed commands waiting to go to another worker in one message.
pub(crate) struct Pending {
    pub(crate) worker: usize,
    /// Arguments of every command, back to back.
    pub(crate) data: Vec<u8>,
    /// (command index, database, argument end offsets into `data`).
    pub(crate) cmds: Vec<(usize, usize, SmallVec<[u32; 8]>)>,
}

impl Pending {
    /// An empty batch for worker `worker`.
    pub(crate) fn new(worker: usize) -> Pending {
        Pending {
            worker,
            data: Vec::new(),
            cmds: Vec::new(),
        }
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

/// The replies of one batch of a turn.
pub(crate) struct BatchReply {
    worker: usize,
    /// Every command's reply, back to back.
    buf: Vec<u8>,
    /// End offset in `buf` of each command's reply.
    ends: Vec<u32>,
}

/// Where a batch's replies go.
enum ReplyTo {
    /// A blocking command sent alone: its reply (see `crate::blocking`).
    One(flume::Sender<Vec<u8>>),
    /// A batch of a turn: its replies and where each ends, to the connection on worker
    /// `from`.
    Turn {
        tx: flume::Sender<BatchReply>,
        from: usize,
    },
}

/// The job that runs `p` on its worker and sends the reply of the blocking command it
/// holds (alone) on `tx`, with the client's wait state and socket.
pub(crate) fn blocking_job(
    p: Pending,
    proto: Proto,
    now_ms: i64,
    tx: flume::Sender<Vec<u8>>,
    wait: (Arc<crate::blocking::WaitState>, std::os::fd::RawFd),
) -> crate::worker::Job {
    batch_job(p, proto, now_ms, ReplyTo::One(tx), Some(wait))
}

fn batch_job(
    p: Pending,
    proto: Proto,
    now_ms: i64,
    tx: ReplyTo,
    wait: Option<(Arc<crate::blocking::WaitState>, std::os::fd::RawFd)>,
) -> crate::worker::Job {
    Box::new(move |s: &mut Shard| {
        let ends = match tx {
            ReplyTo::Turn { .. } => Vec::with_capacity(p.cmds.len()),
            ReplyTo::One(_) => Vec::new(),
        };
        let b = Batch {
            p,
            next: 0,
            start: 0,
            reply: Reply {
                buf: Vec::with_capacity(256),
                proto,
            },
            ends,
            now_ms,
            tx,
            mark: None,
            wait,
            wrote: false,
            prefetched: 0,
        };
        run_batch(s, b);
    })
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
            let missing = if commands::reads_values(idx, &argv) {
                let mark = *b.mark.get_or_insert_with(|| s.keyspace.read_mark());
                s.keyspace
                    .missing(db, &key_args(idx, &argv), b.now_ms, mark)
            } else {
                Vec::new()
            };
            if missing.is_empty() {
                if let Some((wait, _)) = &b.wait {
                    if !wait.claim_first_run() {
                        // Its connection gave up (timed out, unblocked, went away) first.
                        return;
                    }
                }
                let writes = s.keyspace.writes();
                let asks_to_wait = exec_keyed(s, idx, db, b.now_ms, &mut b.reply, &argv);
                b.wrote |= s.keyspace.writes() != writes;
                if asks_to_wait.is_none() {
                    if let Some((wait, _)) = &b.wait {
                        wait.served();
                    }
                }
                if let Some(req) = asks_to_wait {
                    match (b.wait.take(), b.tx) {
                        (Some((state, fd)), ReplyTo::One(tx)) => {
                            let w = crate::blocking::Waiter::new(
                                db,
                                idx,
                                &argv,
                                req.keys,
                                b.reply.proto,
                                tx,
                                state,
                                fd,
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
            ReplyTo::Turn { tx, from } => {
                let reply = BatchReply {
                    worker,
                    buf: self.reply.buf,
                    ends: self.ends,
                };
                // With the other replies of this turn for `from`, in one message; handed to
                // the connection on its own thread (a local wake-up).
                crate::worker::post(
                    from,
                    true,
                    Box::new(move |_: &mut Shard| {
                        let _ = tx.send(reply);
                    }),
                );
            }
        }
    }
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
    /// The connection's reply channel (made on its first hop).
    chan: Option<(flume::Sender<BatchReply>, flume::Receiver<BatchReply>)>,
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
                self.queued.push(Pending::new(w));
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
    pub fn send(&mut self, me: usize, proto: Proto, now_ms: i64) {
        if self.queued.is_empty() {
            return;
        }
        let tx = self.chan.get_or_insert_with(flume::unbounded).0.clone();
        for p in self.queued.drain(..) {
            let w = p.worker;
            let to = ReplyTo::Turn {
                tx: tx.clone(),
                from: me,
            };
            // With the other batches of this turn for `w` (all connections), in one message.
            crate::worker::post(w, false, batch_job(p, proto, now_ms, to, None));
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
        let rx = self.chan.as_ref().expect("sent").1.clone();
        let mut got: SmallVec<[BatchReply; 4]> = SmallVec::new();
        while self.in_flight > 0 {
            got.push(rx.recv_async().await.expect("a worker dropped a batch"));
            self.in_flight -= 1;
        }
        let holes = std::mem::take(&mut self.holes);
        if let ([h], [r]) = (&holes[..], &got[..]) {
            if h.at == reply.len() {
                // Only forwarded commands since the last gather: append.
                reply.extend_from_slice(&r.buf);
                return;
            }
        }
        let total: usize = got.iter().map(|r| r.buf.len()).sum();
        let old = std::mem::take(reply);
        let mut out = Vec::with_capacity(old.len() + total);
        // Per batch: commands and bytes taken so far.
        let mut taken: SmallVec<[(usize, usize); 4]> = got.iter().map(|_| (0, 0)).collect();
        let mut pos = 0;
        for h in &holes {
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
            out.extend_from_slice(&r.buf[from..to]);
            taken[i] = (cmds, to);
        }
        out.extend_from_slice(&old[pos..]);
        *reply = out;
    }
}
