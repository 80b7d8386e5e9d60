//! Workers: one OS thread per worker, pinned to a CPU, each driving one io_uring (compio) for
//! its sockets. A worker owns a [`Shard`]: the keys of its slots, its statistics and its
//! clients. Other workers reach a shard only by sending it a [`Job`] through its inbox.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::client::ClientInfo;
use crate::commands::{CommandStats, COMMANDS};
use crate::config::Config;
use crate::keyspace::Keyspace;

/// Work sent to a worker: runs on the worker's thread with its shard.
pub type Job = Box<dyn FnOnce(&mut Shard) + Send>;

/// The transaction id of an envelope whose jobs run at once even while a transaction holds
/// the worker: they do not touch the shard (replies going back to connections).
pub const UNHELD: u64 = u64::MAX;

/// A job with the transaction it belongs to (0: none). While a worker is held by a
/// transaction it runs only that transaction's jobs; the others wait in arrival order.
pub struct Envelope {
    /// Transaction id, or 0.
    pub txn: u64,
    /// The work.
    pub job: Work,
}

/// What a worker is asked to do: any job, or a hop (a batch of forwarded commands, or one
/// coming back with its replies), which travels without a box of its own; or several, in
/// order (the posts of one turn, see [`post`]).
pub enum Work {
    /// A job.
    Job(Job),
    /// A hop (see `crate::hop`).
    Hop(crate::hop::HopWork),
    /// Several, run in order.
    Many(Vec<Work>),
}

impl Envelope {
    /// An envelope carrying one job, of transaction `txn` (0: none).
    pub fn job(txn: u64, job: Job) -> Envelope {
        Envelope {
            txn,
            job: Work::Job(job),
        }
    }
}

impl Work {
    fn run(self, s: &mut Shard) {
        match self {
            Work::Job(job) => job(s),
            Work::Hop(h) => h.run(s),
            Work::Many(all) => all.into_iter().for_each(|w| w.run(s)),
        }
    }
}

/// State shared by every worker (read-mostly; no data-path locks).
pub struct Shared {
    /// Configuration.
    pub config: Config,
    /// Number of workers.
    pub workers: usize,
    /// Inbox of each worker.
    pub inboxes: Vec<flume::Sender<Envelope>>,
    /// Next transaction id (multi-worker atomic commands).
    pub next_txn: AtomicU64,
    /// Connected clients, all workers.
    pub connected_clients: AtomicU64,
    /// Next client id.
    pub next_client_id: AtomicU64,
    /// Connections accepted since start.
    pub total_connections: AtomicU64,
    /// Connections refused (maxclients).
    pub rejected_connections: AtomicU64,
    /// Clients waiting in a blocking command (INFO's `blocked_clients`).
    pub blocked_clients: AtomicU64,
    /// Which workers hold pub/sub subscriptions (the workers a PUBLISH visits).
    pub pubsub_active: crate::pubsub::Active,
    /// Set when the server is stopping.
    pub stopping: AtomicBool,
    /// Active expiry on (`DEBUG SET-ACTIVE-EXPIRE 0|1`; on at start). When off, expired keys
    /// go only when a command touches them.
    pub active_expire: AtomicBool,
    /// RDB saves and loads (LASTSAVE, INFO persistence).
    pub rdb: crate::rdb::State,
    /// Following a primary (REPLICAOF; see `crate::replica`).
    pub repl: crate::replica::State,
    /// When the server started.
    pub started: Instant,
    /// Unix time in ms when the server started.
    pub started_unix_ms: i64,
    /// TCP port.
    pub port: u16,
    /// Run id (40 hex characters), as Redis prints in INFO.
    pub run_id: String,
    /// Path of the executable.
    pub executable: String,
    /// The Lua script cache (SCRIPT LOAD, EVAL).
    pub scripts: Arc<crate::scripting::Scripts>,
}

impl Shared {
    /// Asks the whole process to stop (as SIGTERM does).
    pub fn request_shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        // SAFETY: kill(2) on our own pid with a valid signal number has no memory effects.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGTERM);
        }
    }
}

/// Counters of one worker.
#[derive(Default)]
pub struct Stats {
    /// Per command table index.
    pub commands: Vec<CommandStats>,
    /// Per subcommand (`config|get`), as Redis reports container commands.
    pub subcommands: HashMap<&'static str, CommandStats>,
    /// Latency histogram per command table index (allocated on the first call; INFO
    /// latencystats, `/metrics`).
    pub command_latency: Vec<Option<Box<skerry_store::LatencyHistogram>>>,
    /// Latency histogram per subcommand.
    pub subcommand_latency: HashMap<&'static str, Box<skerry_store::LatencyHistogram>>,
    /// Error replies by their first word.
    pub errors: HashMap<String, u64>,
    /// Commands processed.
    pub total_commands: u64,
    /// Error replies sent.
    pub total_error_replies: u64,
    /// Bytes read from clients.
    pub net_input_bytes: u64,
    /// Bytes written to clients.
    pub net_output_bytes: u64,
    /// Clients disconnected for output buffer limits.
    pub client_output_limit_disconnections: u64,
    /// Clients disconnected for query buffer limits.
    pub client_query_limit_disconnections: u64,
}

impl Stats {
    fn new() -> Self {
        Stats {
            commands: vec![CommandStats::default(); COMMANDS.len()],
            command_latency: (0..COMMANDS.len()).map(|_| None).collect(),
            ..Default::default()
        }
    }

    /// Records an error reply (its first word, as Redis's errorstats does).
    pub fn record_error(&mut self, reply: &[u8]) {
        self.total_error_replies += 1;
        let body = reply.strip_prefix(b"-").unwrap_or(reply);
        let end = body
            .iter()
            .position(|&c| c == b' ' || c == b'\r')
            .unwrap_or(body.len());
        let word = String::from_utf8_lossy(&body[..end]).into_owned();
        *self.errors.entry(word).or_insert(0) += 1;
    }

    /// Counts one call's duration in the latency histogram of command `idx` (or of its
    /// subcommand `sub`).
    pub fn record_latency(&mut self, idx: usize, sub: Option<&'static str>, ns: u64) {
        let h = match sub {
            Some(name) => self.subcommand_latency.entry(name).or_default(),
            None => self.command_latency[idx].get_or_insert_with(Default::default),
        };
        h.record_ns(ns);
    }

    /// Clears every counter (CONFIG RESETSTAT).
    pub fn reset(&mut self) {
        *self = Stats::new();
    }
}

/// Everything one worker owns.
pub struct Shard {
    /// Worker index.
    pub id: usize,
    /// The worker's keys. A mutable access writes the collection its commands left
    /// behind first (decision 0035; only `conn::exec_keyed` reaches past that).
    pub keyspace: crate::keyspace::behind::Guarded,
    /// The worker's counters.
    pub stats: Stats,
    /// Clients connected to this worker.
    pub clients: HashMap<u64, Rc<ClientInfo>>,
    /// Shared state.
    pub shared: Arc<Shared>,
    /// The transaction holding this worker: only its jobs and its coordinator touch the
    /// shard until it releases it.
    pub hold: Option<u64>,
    /// Jobs of others that arrived while the worker was held, in arrival order.
    deferred: VecDeque<Envelope>,
    /// Local tasks waiting for the hold to end.
    hold_waiters: Vec<Waker>,
    /// Blocked commands waiting on this worker's keys.
    pub blocking: crate::blocking::Registry,
    /// The pub/sub subscriptions of this worker's connections.
    pub pubsub: crate::pubsub::Registry,
    /// The commands this worker ran slowly (SLOWLOG).
    pub slowlog: crate::slowlog::SlowLog,
}

impl Shard {
    fn accepts(&self, txn: u64) -> bool {
        txn == UNHELD || self.hold.is_none_or(|h| h == txn)
    }

    /// Runs a job from the inbox now, or defers it while another transaction holds the shard.
    fn deliver(&mut self, env: Envelope) {
        if self.accepts(env.txn) {
            env.job.run(self);
            self.drain_deferred();
            crate::blocking::serve_ready(self);
        } else {
            self.deferred.push_back(env);
        }
    }

    /// Runs deferred jobs in order while the shard is free (a deferred job may take a hold
    /// again, which stops the drain).
    fn drain_deferred(&mut self) {
        while self.hold.is_none() {
            let Some(env) = self.deferred.pop_front() else {
                break;
            };
            env.job.run(self);
        }
    }

    /// Ends the hold of `txn` and lets waiting work run.
    fn release(&mut self, txn: u64) {
        assert_eq!(
            self.hold,
            Some(txn),
            "worker {} released by a transaction not holding it",
            self.id
        );
        self.hold = None;
        for w in self.hold_waiters.drain(..) {
            w.wake();
        }
        self.drain_deferred();
        // Writes of the transaction may have made keys ready for blocked clients.
        crate::blocking::serve_ready(self);
    }
}

/// Waits until the local shard is not held by a transaction other than `txn` (0: any hold
/// blocks); with `take`, holds it for `txn` before returning.
async fn local_unheld(txn: u64, take: bool) {
    let shard = local_shard();
    let mut queued = false;
    std::future::poll_fn(|cx| {
        let mut s = shard.borrow_mut();
        if txn != 0 && s.hold == Some(txn) {
            // Already ours (or granted to us from the queue below).
            return Poll::Ready(());
        }
        if s.hold.is_none() && (!take || s.deferred.is_empty()) {
            if take {
                s.hold = Some(txn);
            }
            return Poll::Ready(());
        }
        if take {
            // A local transaction waits its turn with the remote ones, in arrival order:
            // the hold is granted when the queue reaches it (else a stream of remote
            // transactions, served first at every release, could starve it for ever).
            if !queued {
                queued = true;
                let waker = cx.waker().clone();
                let job: Job = Box::new(move |s: &mut Shard| {
                    s.hold = Some(txn);
                    waker.wake();
                });
                s.deferred.push_back(Envelope::job(txn, job));
            }
        } else {
            s.hold_waiters.push(cx.waker().clone());
        }
        Poll::Pending
    })
    .await
}
/// Jobs posted during this loop turn, per target worker, not yet sent (see [`post`]).
#[derive(Default)]
struct Posts {
    /// Per worker: jobs for its shard (sent as envelopes of no transaction).
    shard: Vec<Vec<Work>>,
    /// Per worker: jobs that do not touch its shard ([`UNHELD`]).
    unheld: Vec<Vec<Work>>,
    /// Jobs are waiting to be sent.
    any: bool,
    /// The sending task, parked while nothing waits.
    sender: Option<Waker>,
}

thread_local! {
    static POSTS: RefCell<Posts> = RefCell::new(Posts::default());
}

/// Sends `job` to worker `w` at the end of this loop turn, in one message with every other
/// job posted for `w` meanwhile (by any connection of this worker): a hop costs one inbox
/// message and at most one wake-up of `w` per turn, not one per connection (decision 0017),
/// and a turn's hops cost one allocation per target, not several per hop (decision 0022).
/// `unheld`: the job does not touch `w`'s shard and runs even while a transaction holds it
/// (a reply going back to a connection); else it runs as a job of no transaction.
pub fn post(w: usize, unheld: bool, job: Work) {
    POSTS.with(|p| {
        let mut p = p.borrow_mut();
        let lists = if unheld { &mut p.unheld } else { &mut p.shard };
        if lists.len() <= w {
            lists.resize_with(w + 1, Vec::new);
        }
        lists[w].push(job);
        if !p.any {
            p.any = true;
            if let Some(waker) = p.sender.take() {
                waker.wake();
            }
        }
    })
}

/// The task sending posted jobs: woken by the first [`post`] of a turn, it runs after the
/// tasks already scheduled in that turn (the other connections' turns), so their jobs leave
/// together.
async fn send_posts(shared: Arc<Shared>) {
    loop {
        std::future::poll_fn(|cx| {
            POSTS.with(|p| {
                let mut p = p.borrow_mut();
                if p.any {
                    Poll::Ready(())
                } else {
                    p.sender = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
        })
        .await;
        // One message per target worker with every job of the turn for it, in the order
        // posted; a single job goes alone.
        POSTS.with(|p| {
            let mut p = p.borrow_mut();
            p.any = false;
            let Posts { shard, unheld, .. } = &mut *p;
            for (txn, lists) in [(UNHELD, unheld), (0, shard)] {
                for (w, jobs) in lists.iter_mut().enumerate() {
                    let job = match jobs.len() {
                        0 => continue,
                        1 => jobs.pop().expect("one job"),
                        n => Work::Many(std::mem::replace(jobs, Vec::with_capacity(n))),
                    };
                    if shared.inboxes[w].send(Envelope { txn, job }).is_err() {
                        tracing::error!("worker {w} has stopped");
                    }
                }
            }
        });
    }
}

/// How long a collection may stay behind its record when nothing else needs the keyspace
/// (decision 0035): the commands of every turn meanwhile that change it share one write.
/// Under `appendfsync everysec` (the only policy with write-behind besides `no`) the record
/// still reaches the device well within the second a crash may lose.
const WRITE_BEHIND_DELAY: Duration = Duration::from_millis(10);

/// [`WRITE_BEHIND_DELAY`], or `SKERRY_WRITE_BEHIND_DELAY_MS` when set (for measurements).
fn behind_delay() -> Duration {
    static DELAY: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *DELAY.get_or_init(|| {
        std::env::var("SKERRY_WRITE_BEHIND_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(WRITE_BEHIND_DELAY, Duration::from_millis)
    })
}

/// The task writing the collection the commands left behind (decision 0035): woken by the
/// first command that leaves one, it writes it [`WRITE_BEHIND_DELAY`] later unless
/// something that needs the keyspace wrote it first (every access but the commands that
/// may leave it behind does).
async fn write_behind() {
    loop {
        std::future::poll_fn(|cx| {
            if local_shard().borrow().keyspace.has_behind() {
                Poll::Ready(())
            } else {
                crate::keyspace::behind::park_flusher(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        compio::time::sleep(behind_delay()).await;
        let shard = local_shard();
        if shard.borrow().hold.is_some() {
            // Not between a transaction's steps: after it (or when its next step reaches
            // the keyspace).
            wait_local_unheld().await;
            continue;
        }
        let mut s = shard.borrow_mut();
        s.keyspace.write_behind();
        // As after every command and job: the write may have made a key ready.
        crate::blocking::serve_ready(&mut s);
    }
}

/// Makes every record appended so far on every worker durable (clean shutdown, and
/// `appendfsync always` after multi-worker writes). Returns once all workers answered.
/// The workers sync at once: the wait is one fdatasync, not one per worker.
pub async fn sync_all(shared: &Shared, me: usize) {
    let mut answers = Vec::with_capacity(shared.workers);
    for w in 0..shared.workers {
        let (tx, rx) = flume::bounded(1);
        let job = commit_job(tx);
        if w == me {
            job(&mut local_shard().borrow_mut());
        } else if shared.inboxes[w].send(Envelope::job(0, job)).is_err() {
            continue;
        }
        answers.push((w, rx));
    }
    for (w, rx) in answers {
        if let Ok(Err(e)) = rx.recv_async().await {
            tracing::error!("worker {w}: data file sync failed: {e}");
        }
    }
}

/// A job that makes the worker's appended records durable and then answers on `tx`.
pub fn commit_job(tx: flume::Sender<Result<(), String>>) -> Job {
    Box::new(move |s: &mut Shard| {
        // A collection left behind is appended first.
        s.keyspace.write_behind();
        let log = s.keyspace.log().clone();
        compio::runtime::spawn(async move {
            let _ = tx.send(log.commit().await.map_err(|e| e.to_string()));
        })
        .detach()
    })
}

/// Waits until no transaction holds this worker's shard (for a command about to touch it).
pub async fn wait_local_unheld() {
    local_unheld(0, false).await
}

/// Unix time in milliseconds.
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

thread_local! {
    static SHARD: RefCell<Option<Rc<RefCell<Shard>>>> = const { RefCell::new(None) };
}

/// Runs `f` on the shard of the current worker thread, without taking a reference to it
/// (cheaper than [`local_shard`] for a short look). `f` must not borrow the shard mutably
/// while another borrow is live, as with the `RefCell` itself.
#[inline]
pub fn with_local_shard<R>(f: impl FnOnce(&RefCell<Shard>) -> R) -> R {
    SHARD.with(|s| f(s.borrow().as_deref().expect("not on a worker thread")))
}

/// The shard of the current worker thread.
pub fn local_shard() -> Rc<RefCell<Shard>> {
    SHARD.with(|s| s.borrow().clone().expect("not on a worker thread"))
}

/// Runs `f` on worker `w`'s shard and returns its result; runs inline when `w` is the current
/// worker (after any transaction holding it has finished).
pub async fn run_on<R, F>(shared: &Shared, me: usize, w: usize, f: F) -> R
where
    R: Send + 'static,
    F: FnOnce(&mut Shard) -> R + Send + 'static,
{
    run_in(shared, me, w, 0, f).await
}

/// [`run_on`] as part of transaction `txn` (0: none).
pub async fn run_in<R, F>(shared: &Shared, me: usize, w: usize, txn: u64, f: F) -> R
where
    R: Send + 'static,
    F: FnOnce(&mut Shard) -> R + Send + 'static,
{
    if w == me {
        local_unheld(txn, false).await;
        let shard = local_shard();
        let mut s = shard.borrow_mut();
        return f(&mut s);
    }
    let (tx, rx) = flume::bounded(1);
    let job: Job = Box::new(move |s: &mut Shard| {
        let _ = tx.send(f(s));
    });
    if shared.inboxes[w].send(Envelope::job(txn, job)).is_err() {
        panic!("worker {w} has stopped");
    }
    rx.recv_async().await.expect("worker dropped a job")
}

/// Multi-worker atomic work: holds every involved worker (in ascending order, so two
/// transactions never wait for each other in a cycle), runs steps on them, and releases
/// them. While held, a worker runs nothing else that touches its keys.
pub struct Txn {
    shared: Arc<Shared>,
    me: usize,
    id: u64,
    workers: Vec<usize>,
    /// Its steps are for a client in CLIENT NO-TOUCH: their lookups leave access clocks
    /// alone (see [`Txn::with_no_touch`]).
    no_touch: bool,
    /// It took its holds (and releases them when dropped); false for [`Txn::join`].
    owns_holds: bool,
}

impl Txn {
    /// Holds `workers` (any order, duplicates allowed) for a new transaction.
    pub async fn begin(shared: &Arc<Shared>, me: usize, mut workers: Vec<usize>) -> Txn {
        workers.sort_unstable();
        workers.dedup();
        let id = shared.next_txn.fetch_add(1, Ordering::Relaxed);
        for &w in &workers {
            if w == me {
                local_unheld(id, true).await;
            } else {
                let (tx, rx) = flume::bounded(1);
                let job: Job = Box::new(move |s: &mut Shard| {
                    debug_assert!(s.hold.is_none());
                    s.hold = Some(id);
                    let _ = tx.send(());
                });
                if shared.inboxes[w].send(Envelope::job(id, job)).is_err() {
                    panic!("worker {w} has stopped");
                }
                rx.recv_async().await.expect("worker dropped a job");
            }
        }
        Txn {
            shared: shared.clone(),
            me,
            id,
            workers,
            no_touch: false,
            owns_holds: true,
        }
    }

    /// The running transaction `id` (an EXEC's, which holds every worker), to run steps
    /// through; dropping it releases nothing (the transaction's owner does).
    pub fn join(shared: &Arc<Shared>, me: usize, id: u64) -> Txn {
        Txn {
            shared: shared.clone(),
            me,
            id,
            workers: (0..shared.workers).collect(),
            no_touch: false,
            owns_holds: false,
        }
    }

    /// Marks the transaction's steps as those of a client in CLIENT NO-TOUCH (`on`): the
    /// keyspace lookups of [`Txn::run`] and [`Txn::run_resident`] steps are then not
    /// accesses (keyspace/clock.rs; a keyed command run inside a step decides for itself).
    pub fn with_no_touch(mut self, on: bool) -> Txn {
        self.no_touch = on;
        self
    }

    /// The transaction's id (its jobs pass the holds it took).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// True when it holds every worker.
    pub fn holds_all(&self) -> bool {
        self.workers.len() == self.shared.workers
    }

    /// Runs one step on worker `w` (which must be one of the held workers).
    pub async fn run<R, F>(&self, w: usize, f: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&mut Shard) -> R + Send + 'static,
    {
        debug_assert!(
            self.workers.contains(&w),
            "worker {w} is not held by this transaction"
        );
        let no_touch = self.no_touch;
        run_in(&self.shared, self.me, w, self.id, move |s: &mut Shard| {
            untouched(s, no_touch, f)
        })
        .await
    }

    /// Runs one step on worker `w` that reads the values of `keys` (in `db`): they are made
    /// resident on `w` first (read from the devices without blocking `w`, which this
    /// transaction holds), then `f` runs. `Err` holds the reply message of a failed read.
    pub async fn run_resident<R, F>(
        &self,
        w: usize,
        db: usize,
        keys: Vec<Vec<u8>>,
        now_ms: i64,
        f: F,
    ) -> Result<R, String>
    where
        R: Send + 'static,
        F: FnOnce(&mut Shard) -> R + Send + 'static,
    {
        debug_assert!(self.workers.contains(&w));
        async fn step<R>(
            db: usize,
            keys: Vec<Vec<u8>>,
            now_ms: i64,
            f: impl FnOnce(&mut Shard) -> R,
        ) -> Result<R, String> {
            let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            crate::keyspace::make_resident(db, &refs, now_ms, None).await?;
            let shard = local_shard();
            let mut s = shard.borrow_mut();
            Ok(f(&mut s))
        }
        let no_touch = self.no_touch;
        let f = move |s: &mut Shard| untouched(s, no_touch, f);
        if w == self.me {
            return step(db, keys, now_ms, f).await;
        }
        let (tx, rx) = flume::bounded(1);
        let job: Job = Box::new(move |_s: &mut Shard| {
            compio::runtime::spawn(async move {
                let _ = tx.send(step(db, keys, now_ms, f).await);
            })
            .detach();
        });
        if self.shared.inboxes[w]
            .send(Envelope::job(self.id, job))
            .is_err()
        {
            panic!("worker {w} has stopped");
        }
        rx.recv_async().await.expect("worker dropped a job")
    }
}

/// Runs `f` on `s` as one step (see `Keyspace::set_touch`), with its keyspace lookups not
/// counted as accesses when `no_touch`.
fn untouched<R>(s: &mut Shard, no_touch: bool, f: impl FnOnce(&mut Shard) -> R) -> R {
    s.keyspace.set_touch(!no_touch);
    let r = f(s);
    s.keyspace.set_touch(true);
    r
}

impl Drop for Txn {
    /// Releases every held worker (also when the coordinating task is dropped midway).
    fn drop(&mut self) {
        if !self.owns_holds {
            return;
        }
        for &w in &self.workers {
            let id = self.id;
            if w == self.me {
                local_shard().borrow_mut().release(id);
            } else {
                let job: Job = Box::new(move |s: &mut Shard| s.release(id));
                let _ = self.shared.inboxes[w].send(Envelope::job(id, job));
            }
        }
    }
}

/// Runs `f` on every worker's shard, in worker order, and gathers the results.
pub async fn run_on_all<R, F>(shared: &Shared, me: usize, f: F) -> Vec<R>
where
    R: Send + 'static,
    F: Fn(&mut Shard) -> R + Send + Sync + Clone + 'static,
{
    let all: Vec<usize> = (0..shared.workers).collect();
    run_on_workers_in(shared, me, &all, 0, f).await
}

/// Runs `f` on the shards of `workers` (ascending, no repeats) and gathers the results in
/// that order. The remote jobs are sent first, so the workers run them in parallel.
pub async fn run_on_workers<R, F>(shared: &Shared, me: usize, workers: &[usize], f: F) -> Vec<R>
where
    R: Send + 'static,
    F: Fn(&mut Shard) -> R + Send + Sync + Clone + 'static,
{
    run_on_workers_in(shared, me, workers, 0, f).await
}

/// [`run_on_workers`] as part of transaction `txn` (0: none), which holds them.
pub async fn run_on_workers_in<R, F>(
    shared: &Shared,
    me: usize,
    workers: &[usize],
    txn: u64,
    f: F,
) -> Vec<R>
where
    R: Send + 'static,
    F: Fn(&mut Shard) -> R + Send + Sync + Clone + 'static,
{
    debug_assert!(workers.windows(2).all(|w| w[0] < w[1]));
    let mut waiting = Vec::with_capacity(workers.len());
    for &w in workers {
        if w == me {
            waiting.push(None);
            continue;
        }
        let (tx, rx) = flume::bounded(1);
        let f = f.clone();
        let job: Job = Box::new(move |s: &mut Shard| {
            let _ = tx.send(f(s));
        });
        if shared.inboxes[w].send(Envelope::job(txn, job)).is_err() {
            panic!("worker {w} has stopped");
        }
        waiting.push(Some(rx));
    }
    let mut mine = None;
    if workers.contains(&me) {
        local_unheld(txn, false).await;
        let shard = local_shard();
        let mut s = shard.borrow_mut();
        mine = Some(f(&mut s));
    }
    let mut out = Vec::with_capacity(workers.len());
    for rx in waiting {
        match rx {
            None => out.push(mine.take().expect("own result")),
            Some(rx) => out.push(rx.recv_async().await.expect("worker dropped a job")),
        }
    }
    out
}

/// Starts worker `id` on its own thread. `listeners` are the already bound sockets this worker
/// accepts on (SO_REUSEPORT: every worker has its own).
pub fn spawn_worker(
    id: usize,
    cpu: Option<usize>,
    shared: Arc<Shared>,
    inbox: flume::Receiver<Envelope>,
    listeners: Vec<std::net::TcpListener>,
    persisted: (
        skerry_store::Store,
        u64,
        crate::keyspace::RecoveredIndex,
        Vec<skerry_store::BlockId>,
    ),
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("skerry-w{id}"))
        .spawn(move || {
            let mut proactor = compio::driver::ProactorBuilder::new();
            proactor
                .capacity(1024)
                .single_issuer(true)
                .defer_taskrun(true);
            crate::netbuf::configure(&mut proactor);
            let mut builder = compio::runtime::RuntimeBuilder::new();
            builder.with_proactor(proactor);
            if let Some(cpu) = cpu {
                builder.thread_affinity(std::iter::once(cpu).collect());
            }
            let rt = match builder.build() {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!("worker {id}: cannot start io_uring runtime: {e}");
                    std::process::exit(1);
                }
            };
            let (store, max_seq, index, adoptable) = persisted;
            rt.block_on(async move {
                let durability = crate::persist::durability(&shared.config);
                let writer =
                    match skerry_store::Writer::open(store, id as u16, durability, max_seq).await {
                        Ok(w) => Rc::new(w),
                        Err(e) => {
                            tracing::error!("worker {id}: cannot open the data devices: {e}");
                            std::process::exit(1);
                        }
                    };
                // Continue the block this worker was appending to when the previous run
                // stopped (persist::open checked that only this worker's keys are in the way).
                for &b in &adoptable {
                    match writer.adopt(b).await {
                        Ok(true) => {
                            tracing::info!(
                                "worker {id}: continuing data device {} block {} (open when the previous run stopped)",
                                b.device,
                                b.block
                            );
                            break;
                        }
                        Ok(false) => {}
                        Err(e) => tracing::error!(
                            "worker {id}: continuing data device {} block {} failed: {e}",
                            b.device,
                            b.block
                        ),
                    }
                }
                // Blocks whose records are all obsolete come back before the first write
                // (a device that was full before the restart takes writes again at once).
                match writer.reclaim().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!("worker {id}: {n} obsolete blocks reclaimed"),
                    Err(e) => {
                        tracing::error!("worker {id}: reclaiming obsolete blocks failed: {e}")
                    }
                }
                let mut keyspace = Keyspace::new(index, writer);
                if let Some(map) = crate::dbmap::current() {
                    keyspace.apply_db_map(&map);
                }
                keyspace.set_value_cache_bytes(crate::memory::per_worker_cache_bytes(
                    &shared.config,
                    shared.workers,
                ));
                let shard = Rc::new(RefCell::new(Shard {
                    id,
                    keyspace: crate::keyspace::behind::Guarded::new(keyspace),
                    stats: Stats::new(),
                    clients: HashMap::new(),
                    shared: shared.clone(),
                    hold: None,
                    deferred: VecDeque::new(),
                    hold_waiters: Vec::new(),
                    blocking: Default::default(),
                    pubsub: Default::default(),
                    slowlog: Default::default(),
                }));
                SHARD.with(|s| *s.borrow_mut() = Some(shard.clone()));
                for l in listeners {
                    let l = compio::net::TcpListener::from_std(l).expect("listener");
                    compio::runtime::spawn(crate::conn::accept_loop(l, shared.clone(), id))
                        .detach();
                }
                compio::runtime::spawn(cron(shared.clone(), id)).detach();
                compio::runtime::spawn(send_posts(shared.clone())).detach();
                compio::runtime::spawn(write_behind()).detach();
                compio::runtime::spawn(crate::checkpoint::timer(shared.clone(), id)).detach();
                compio::runtime::spawn(crate::defrag::run(shared.clone(), id)).detach();
                // The inbox: jobs from other workers.
                while let Ok(env) = inbox.recv_async().await {
                    let mut s = shard.borrow_mut();
                    s.deliver(env);
                    while let Ok(env) = inbox.try_recv() {
                        s.deliver(env);
                    }
                }
            });
        })
}

/// The allocator's "give unused memory back" call, set by the binary (see
/// [`set_allocator_collect`]).
static ALLOCATOR_COLLECT: std::sync::OnceLock<fn(bool)> = std::sync::OnceLock::new();

/// Registers the allocator's collect call: each worker makes it once a second, so memory
/// freed by a finished burst (index segments rebuilt while growing, connection buffers)
/// goes back to the OS even when no further allocation would trigger the allocator's own
/// delayed purge. Its argument asks for a thorough collect (mimalloc's `force`: also the
/// thread's caches of free memory), which a worker asks for when it ran no command in the
/// last second. A second registration is ignored.
pub fn set_allocator_collect(f: fn(bool)) {
    let _ = ALLOCATOR_COLLECT.set(f);
}

/// Gives the allocator's unused memory back to the OS now (when the binary registered a
/// collect call); `thorough` also empties the calling thread's caches (see
/// [`set_allocator_collect`]).
pub(crate) fn collect_allocator(thorough: bool) {
    if let Some(collect) = ALLOCATOR_COLLECT.get() {
        collect(thorough);
    }
}

/// Once a second: publishes what this worker's value cache holds, recomputes the memory
/// budget (worker 0), gives the cache its share of it (`crate::memory`) and the retained
/// block images what the cache leaves free (decision 0034).
fn resize_value_cache(shared: &Shared, id: usize) {
    let shard = local_shard();
    let stats = shard.borrow().keyspace.value_cache_stats();
    crate::memory::publish_cache_used(id, stats.used_bytes);
    if id == 0 {
        crate::memory::update(&shared.config, shared.workers);
    }
    let want = crate::memory::per_worker_cache_bytes(&shared.config, shared.workers);
    let mut s = shard.borrow_mut();
    if want as u64 != stats.capacity_bytes {
        s.keyspace.set_value_cache_bytes(want);
    } else {
        // The cache may have shrunk (values overwritten or deleted): room for images.
        s.keyspace.retune_retained_images();
    }
}

/// Time the active expiry of hash fields may take per tick (as much again as the key pass).
const HFE_BUDGET: Duration = Duration::from_millis(25);

/// The active expiry of hash fields, one tick's worth (Redis's `activeExpireCycle` walks
/// the hashes with field expiries too): the hashes whose earliest field is due, earliest
/// first, are made resident (read without blocking the worker) and their due fields
/// deleted, within [`HFE_BUDGET`]. After a restart this also walks the keys to find the
/// hashes with field expiries (see `keyspace/hfe.rs`).
async fn expire_hash_fields(shared: &Shared) {
    let started = Instant::now();
    let now_ms = unix_ms();
    let thresholds = shared.config.hot.coll.get();
    let shard = local_shard();
    let mut done = 0usize;
    loop {
        let due = {
            let mut s = shard.borrow_mut();
            if s.hold.is_some() {
                return;
            }
            loop {
                let more = s.keyspace.hfe_discover_step(1024);
                let due = s.keyspace.hfe_due(now_ms, 16);
                if !due.is_empty() || !more || started.elapsed() > HFE_BUDGET {
                    break due;
                }
            }
        };
        if due.is_empty() {
            return;
        }
        for (db, key) in due {
            let read = crate::keyspace::make_resident(db, &[&key[..]], now_ms, None).await;
            let mut s = shard.borrow_mut();
            if s.hold.is_some() {
                return;
            }
            match read {
                Ok(_) => {
                    // Not an access: the hash's access clock stays (keyspace/clock.rs).
                    s.keyspace.set_touch(false);
                    s.keyspace
                        .hfe_expire_fields(db, &key, now_ms, &thresholds, 1000);
                    s.keyspace.set_touch(true);
                }
                Err(e) => {
                    tracing::warn!("active expiry of hash fields: {e}");
                    s.keyspace.hfe_retry_later(db, &key, now_ms);
                }
            }
        }
        done += 16;
        // At least a few dozen hashes a tick, however slow the tick: the hashes due
        // together go together (as in Redis's cycle), not over several ticks.
        if started.elapsed() > HFE_BUDGET && done >= 64 {
            return;
        }
    }
}

/// Periodic per-worker housekeeping, every 100 ms: active expiry (at most a quarter of the
/// worker's time, as Redis's slow expire cycle) and the idle client timeout.
async fn cron(shared: Arc<Shared>, id: usize) {
    const TICK: Duration = Duration::from_millis(100);
    const EXPIRE_BUDGET: Duration = Duration::from_millis(25);
    let mut ticks: u64 = 0;
    let mut commands_at_collect = u64::MAX;
    loop {
        compio::time::sleep(TICK).await;
        ticks += 1;
        let shard = local_shard();
        let log = shard.borrow().keyspace.log().clone();
        // Flush staged records every tick; once a second sync (everysec) and reclaim
        // blocks whose records are all obsolete.
        let r = if ticks.is_multiple_of(10) {
            resize_value_cache(&shared, id);
            let commands = shard.borrow().stats.total_commands;
            if commands == commands_at_collect {
                // Idle for a second: the batches kept for hops go too.
                crate::hop::free_pool();
            }
            collect_allocator(commands == commands_at_collect);
            commands_at_collect = commands;
            log.tick().await
        } else {
            log.flush().await
        };
        if let Err(e) = r {
            tracing::error!("data file write failed: {e}");
        }
        {
            let started = Instant::now();
            let now_ms = unix_ms();
            let mut s = shard.borrow_mut();
            if s.hold.is_some() {
                // A multi-worker transaction owns the shard for now; expire next tick.
                drop(s);
                continue;
            }
            // A big value's chunks read for a command that has run go now.
            s.keyspace.trim_read_buffer();
            // Keys with and without TTL share the table, so finding due keys means scanning.
            // Each tick looks at a tenth of the tables that hold keys with a TTL (a full pass
            // a second, a few ms per tick at millions of keys) and keeps going, up to the time
            // budget, only while more than one key in ten it looks at is due (Redis's
            // adaptive cycle: work follows what is expiring, not what has a TTL).
            let tables: usize = (0..s.keyspace.databases())
                .filter(|&db| s.keyspace.volatile_len(db) > 0)
                .map(|db| s.keyspace.len(db))
                .sum();
            if tables > 0 && shared.active_expire.load(Ordering::Relaxed) {
                let base = (tables / 10).max(1024);
                let (mut examined, mut removed) = (0usize, 0usize);
                loop {
                    let (e, r, wrapped) = s.keyspace.active_expire_step(now_ms, 512);
                    examined += e.max(1);
                    removed += r;
                    let few_due = removed * 10 <= examined;
                    if started.elapsed() > EXPIRE_BUDGET
                        || (few_due && (examined >= base || wrapped))
                    {
                        break;
                    }
                }
            }
        }
        if shared.active_expire.load(Ordering::Relaxed) {
            expire_hash_fields(&shared).await;
        }
        let timeout_s = shared.config.hot.timeout_s.load(Ordering::Relaxed);
        if timeout_s == 0 {
            continue;
        }
        let s = shard.borrow();
        let now = Instant::now();
        // The master client applying a primary's stream is never idle-closed (Redis exempts
        // its master and replica links too).
        let master_client = shared.repl.master_client_id.load(Ordering::Relaxed);
        for c in s.clients.values() {
            if now.duration_since(c.last_interaction.get()) > Duration::from_secs(timeout_s)
                && !c.blocked_in_command.get()
                && c.id != master_client
            {
                tracing::debug!("Closing idle client id={}", c.id);
                c.kill();
            }
        }
    }
}
