//! Connections: accept, read, parse every complete request in the buffer, run each command
//! (locally, or on the worker that owns its keys), and send all replies with one write.

use std::cell::{Cell, RefCell};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncReadMulti, AsyncWrite, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use skerry_resp::{Limits, Parsed, Proto, RequestParser};
use smallvec::SmallVec;

use crate::blocking::WaitEnd;
use crate::client::ClientInfo;
use crate::commands::{self, AsyncCmd, CommandSpec, Exec, Handler, COMMANDS};
use crate::reply::{errors, Reply};
use crate::slot;
use crate::worker::{local_shard, unix_ms, wait_local_unheld, Shard, Shared, Txn};

/// Argument vectors of up to this many arguments live on the stack.
pub(crate) type Argv<'a> = SmallVec<[&'a [u8]; 8]>;

/// CLIENT REPLY state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReplyMode {
    /// Normal.
    On,
    /// No replies.
    Off,
    /// No reply for the next command.
    Skip,
    /// No reply for this command (SKIP was just given); back to On after it.
    SkipThis,
}

/// The state of one client connection.
pub struct Conn {
    /// Shared state.
    pub shared: Arc<Shared>,
    /// This connection's worker.
    pub worker: usize,
    /// Registry entry.
    pub info: Rc<ClientInfo>,
    /// Selected database.
    pub db: usize,
    /// Pending replies.
    pub reply: Reply,
    /// Passed AUTH (or no password is set).
    pub authenticated: bool,
    /// CLIENT REPLY state.
    pub reply_mode: ReplyMode,
    /// Close once the pending replies are written (QUIT, protocol errors, limits).
    pub close_after_reply: bool,
    /// Time of the current batch of commands (Unix ms).
    pub now_ms: i64,
    /// The subcommand of the command being run (`config|get`), for its statistics.
    subcommand: Option<&'static str>,
    /// Keyed commands of this turn for other workers (see `crate::hop`).
    hops: crate::hop::Hops,
    /// This connection may have appended to its own worker's log since its replies were
    /// last handed over (under `appendfsync always` they wait for a commit).
    local_writes: bool,
    /// The connection's outgoing queue (replies before a blocking command leave before it
    /// waits).
    outbox: Option<Rc<Outbox>>,
    /// Commands queued since MULTI.
    pub multi: Option<Multi>,
    /// Set by the owners of WATCHed keys when one changes.
    cas_flag: Arc<std::sync::atomic::AtomicBool>,
    /// The keys this connection WATCHes.
    watched: Vec<(usize, Vec<u8>)>,
    /// This connection's pub/sub subscriptions.
    pub subs: crate::pubsub::ClientSubs,
    /// The reply being written is a pub/sub notification, sent even under CLIENT REPLY
    /// OFF or SKIP (Redis's `CLIENT_PUSHING`).
    pub pushing: bool,
    /// Queued commands of an EXEC are running (Redis's `CLIENT_DENY_BLOCKING` inside MULTI).
    pub in_exec: bool,
    /// The transaction this connection's commands run inside (0: none): a command that
    /// visits workers by itself (KEYS, PUBLISH, ...) inside a script or EXEC goes through
    /// the holds of that transaction.
    pub ambient_txn: u64,
    /// A script's commands are running (SORT then orders a set's elements).
    pub in_script: bool,
}

/// A transaction being queued (MULTI ... EXEC).
#[derive(Default)]
pub struct Multi {
    /// Command index and arguments.
    pub queue: Vec<(usize, Vec<Vec<u8>>)>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub error: bool,
}

/// Executes a keyed command of client `client` (its CLIENT ID, for the slow log) on the
/// shard that owns its keys, recording statistics there. Returns the blocking command's
/// request to wait, when it found nothing to serve (it replied nothing then; see
/// `crate::blocking`). `no_touch`: the client is in CLIENT NO-TOUCH (its lookups leave the
/// keys' access clocks alone, except TOUCH's). `may_leave_behind`: the caller is a plain
/// command path (a connection's own command or a hop batch, not MULTI, a script or a
/// blocked command served later), so a `behind` handler may leave its collection's write
/// to the end of the turn (decision 0035).
#[allow(clippy::too_many_arguments)]
pub fn exec_keyed(
    shard: &mut Shard,
    idx: usize,
    db: usize,
    now_ms: i64,
    reply: &mut Reply,
    argv: &[&[u8]],
    client: u64,
    no_touch: bool,
    may_leave_behind: bool,
) -> Option<crate::commands::BlockRequest> {
    let Handler::Keyed { run, behind, .. } = COMMANDS[idx].handler else {
        unreachable!("exec_keyed on a non-keyed command")
    };
    let started = quanta::Instant::now();
    let mark = reply.buf.len();
    let behind = may_leave_behind && behind && argv.len() > 1;
    if behind && !shard.keyspace.holds_behind(db, argv[1]) {
        // Another key's change waits: written now (through the guard), this one may wait.
        shard.keyspace.write_behind();
    }
    let mut x = Exec {
        // Any other command writes what was left behind first (the guard does).
        ks: if behind {
            shard.keyspace.unguarded()
        } else {
            &mut shard.keyspace
        },
        db,
        now_ms,
        reply,
        config: &shard.shared.config,
        block: None,
    };
    x.ks.begin_command(may_write_several(idx, argv));
    x.ks.set_clock_mode(x.config.hot.clock_mode());
    x.ks.set_touch(crate::commands::keyspace::touches(idx, no_touch));
    x.ks.allow_behind(behind);
    run(&mut x, argv);
    x.ks.allow_behind(false);
    // Lookups outside a command (a cross-worker step's) are accesses.
    x.ks.set_touch(true);
    let mut block = x.block.take();
    x.ks.end_command();
    if behind && x.ks.behind_dropped() {
        debug_assert!(
            false,
            "{} dropped the collection left behind",
            COMMANDS[idx].name
        );
    }
    if let Some(e) = shard.keyspace.unguarded().take_error() {
        // An append to the data devices or a value read failed: nothing was changed (or
        // nothing wrong served); say why.
        reply.buf.truncate(mark);
        reply.error(&format!("ERR {e}"));
        block = None;
    }
    if block.is_none() {
        let ns = record(shard, idx, None, started, &reply.buf[mark..]);
        crate::slowlog::note(shard, idx, argv, client, ns);
    }
    crate::blocking::serve_ready(shard);
    block
}

/// The reply of a blocking command whose wait ended without an element: CLIENT UNBLOCK
/// ... ERROR (`unblocked` 2) or its time-out (time-out, or CLIENT UNBLOCK without ERROR).
fn ended_wait_reply(
    proto: Proto,
    unblocked: u8,
    timeout: Option<(u64, crate::commands::TimeoutReply)>,
) -> Vec<u8> {
    let mut r = Reply::new(proto);
    if unblocked == 2 {
        r.error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
    } else {
        let on_timeout = timeout.map_or(crate::commands::TimeoutReply::NullArray, |t| t.1);
        crate::blocking::timeout_reply(&mut r, on_timeout);
    }
    r.buf
}

/// The reply of blocking command `idx` when it may not wait (inside MULTI), as Redis 7.0
/// answers under CLIENT_DENY_BLOCKING: a null bulk for BLMOVE and BRPOPLPUSH, a null array
/// for the others (not the time-out reply, which is a null array for all of them).
fn deny_blocking_reply(idx: usize, reply: &mut Reply) {
    match COMMANDS[idx].name {
        "blmove" | "brpoplpush" => reply.null(),
        _ => reply.null_array(),
    }
}

/// True when keyed command `idx` may append several records (a write with several key
/// arguments, MOVE, or RESTORE, which removes the old value before writing the new one):
/// its records then form one unit for recovery.
pub(crate) fn may_write_several(idx: usize, argv: &[&[u8]]) -> bool {
    let spec = &COMMANDS[idx];
    // A one-key command (first key = last key, none found otherwise) has no more.
    let several_keys = || !spec.one_key(argv.len()) && spec.key_positions(argv).len() > 1;
    spec.has_flag("write") && (spec.name == "move" || spec.name == "restore" || several_keys())
}

/// Answers keyed command `idx` with `ERR msg` without running it (its values could not be
/// read), recording the failed call.
pub(crate) fn exec_failed(shard: &mut Shard, idx: usize, reply: &mut Reply, msg: &str) {
    let started = quanta::Instant::now();
    let mark = reply.buf.len();
    reply.error(&format!("ERR {msg}"));
    let _ = record(shard, idx, None, started, &reply.buf[mark..]);
}

/// The key arguments of keyed command `idx`.
#[inline]
pub(crate) fn key_args<'a>(idx: usize, argv: &[&'a [u8]]) -> SmallVec<[&'a [u8]; 4]> {
    let spec = &COMMANDS[idx];
    if spec.only_first_key(argv.len()) {
        return smallvec::smallvec![argv[1]];
    }
    spec.key_positions(argv)
        .into_iter()
        .map(|p| argv[p])
        .collect()
}

/// Records the call of blocking command `idx` that timed out or was unblocked: it ran no
/// further, so no time; an error `reply` (CLIENT UNBLOCK ... ERROR) counts as failed.
fn record_unblocked(shard: &mut Shard, idx: usize, reply: &[u8]) {
    count_call(shard, idx, None, 0, reply);
}

/// Records a command's (or subcommand's) call, time and error reply (if it replied with
/// one); returns its time in nanoseconds.
fn record(
    shard: &mut Shard,
    idx: usize,
    sub: Option<&'static str>,
    started: quanta::Instant,
    reply: &[u8],
) -> u64 {
    let ns = started.elapsed().as_nanos() as u64;
    count_call(shard, idx, sub, ns, reply);
    shard.stats.record_latency(idx, sub, ns);
    ns
}

/// Counts one call of `idx` (or `sub`) taking `ns`, failed when `reply` is an error.
fn count_call(shard: &mut Shard, idx: usize, sub: Option<&'static str>, ns: u64, reply: &[u8]) {
    let st = &mut shard.stats;
    let c = match sub {
        Some(name) => st.subcommands.entry(name).or_default(),
        None => &mut st.commands[idx],
    };
    c.calls += 1;
    c.usec += ns / 1000;
    st.total_commands += 1;
    if reply.first() == Some(&b'-') {
        c.failed += 1;
        st.record_error(reply);
    }
}

impl Conn {
    /// This connection as a pub/sub receiver.
    pub fn subscriber(&self) -> crate::pubsub::Subscriber {
        crate::pubsub::Subscriber {
            info: self.info.clone(),
            out: self
                .outbox
                .clone()
                .expect("a served connection has an outbox"),
        }
    }

    /// Runs `f` on worker `w` (inline when it is this worker).
    pub async fn on<R, F>(&self, w: usize, f: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&mut Shard) -> R + Send + 'static,
    {
        crate::worker::run_in(&self.shared, self.worker, w, self.ambient_txn, f).await
    }

    /// Runs `f` on every worker and gathers the results in worker order.
    pub async fn on_all<R, F>(&self, f: F) -> Vec<R>
    where
        R: Send + 'static,
        F: Fn(&mut Shard) -> R + Send + Sync + Clone + 'static,
    {
        let all: Vec<usize> = (0..self.shared.workers).collect();
        crate::worker::run_on_workers_in(&self.shared, self.worker, &all, self.ambient_txn, f).await
    }

    /// Replies with an error counted as rejected (before the command ran) against the command
    /// `idx` (or the current subcommand).
    fn reject(&mut self, idx: Option<usize>, msg: &str) {
        self.reject_bytes(idx, msg.as_bytes());
    }

    /// [`Conn::reject`] for a message that may hold arbitrary bytes from the client.
    fn reject_bytes(&mut self, idx: Option<usize>, msg: &[u8]) {
        let mark = self.reply.buf.len();
        skerry_resp::error(&mut self.reply.buf, msg);
        let shard = local_shard();
        let mut s = shard.borrow_mut();
        s.stats.record_error(&self.reply.buf[mark..]);
        match (idx, self.subcommand) {
            (Some(_), Some(sub)) => s.stats.subcommands.entry(sub).or_default().rejected += 1,
            (Some(i), None) => s.stats.commands[i].rejected += 1,
            (None, _) => {}
        }
    }

    /// The worker owning every key of the command, or None when they span workers.
    fn owner(&self, spec: &CommandSpec, argv: &[&[u8]]) -> Option<usize> {
        let workers = self.shared.workers;
        if workers == 1 {
            return Some(0);
        }
        let mut owner = None;
        for p in spec.key_positions(argv) {
            let w = slot::owner(argv[p], workers);
            match owner {
                None => owner = Some(w),
                Some(o) if o != w => return None,
                _ => {}
            }
        }
        Some(owner.unwrap_or(self.worker))
    }

    /// True when command `spec` (with `argv`) may run while a script is busy: its flags
    /// (or its subcommand's) say `allow_busy`.
    fn allowed_while_busy(&self, spec: &CommandSpec, argv: &[&[u8]]) -> bool {
        if spec.has_flag("allow_busy") {
            return true;
        }
        argv.get(1)
            .and_then(|a| spec.subcommand(a))
            .is_some_and(|sub| sub.flags.contains(&"allow_busy"))
    }

    /// Runs one command. `known`: its command index, when the caller looked it up already.
    pub async fn dispatch(&mut self, argv: &[&[u8]], known: Option<usize>) {
        let writes = local_writes_count();
        self.dispatch_command(argv, known).await;
        // Whatever the command was, if this worker's log grew meanwhile (its writes, or
        // others' while it waited: then the commit is shared), the replies wait for a
        // commit under `appendfsync always` (see `Conn::ack_local_writes`).
        if local_writes_count() != writes {
            self.local_writes = true;
        }
    }

    async fn dispatch_command(&mut self, argv: &[&[u8]], known: Option<usize>) {
        let Some(idx) = known.or_else(|| commands::lookup(argv[0])) else {
            self.flush_pending().await;
            if let Some(m) = &mut self.multi {
                m.error = true;
            }
            let msg = unknown_command_message(argv);
            self.with_reply_mode(|c| c.reject_bytes(None, &msg));
            return;
        };
        let spec = &COMMANDS[idx];
        self.info.last_cmd.set(spec.name);
        self.subcommand = None;
        if !spec.arity_ok(argv.len()) {
            self.flush_pending().await;
            if let Some(m) = &mut self.multi {
                m.error = true;
            }
            let msg = format!("ERR wrong number of arguments for '{}' command", spec.name);
            self.with_reply_mode(|c| c.reject(Some(idx), &msg));
            return;
        }
        if !spec.subcommands.is_empty() && argv.len() >= 2 {
            match spec.subcommand(argv[1]) {
                None => {
                    self.flush_pending().await;
                    let mut msg = b"ERR unknown subcommand '".to_vec();
                    msg.extend_from_slice(&argv[1][..argv[1].len().min(128)]);
                    msg.extend_from_slice(
                        format!("'. Try {} HELP.", spec.name.to_ascii_uppercase()).as_bytes(),
                    );
                    self.with_reply_mode(|c| c.reject_bytes(Some(idx), &msg));
                    return;
                }
                Some(sub) => {
                    self.info.last_cmd.set(sub.name);
                    self.subcommand = Some(sub.name);
                    if !sub.arity_ok(argv.len()) {
                        self.flush_pending().await;
                        let msg =
                            format!("ERR wrong number of arguments for '{}' command", sub.name);
                        self.with_reply_mode(|c| c.reject(Some(idx), &msg));
                        return;
                    }
                }
            }
        }
        if self.shared.scripts.busy() && !self.allowed_while_busy(spec, argv) {
            self.flush_pending().await;
            if spec.name == "exec" && self.multi.is_some() {
                // EXEC refused: the transaction is discarded (Redis's execCommandAbort).
                self.multi = None;
                self.info.multi.set(-1);
                self.unwatch_all();
                let msg = format!(
                    "EXECABORT Transaction discarded because of: {}",
                    self.shared.scripts.busy_error()
                );
                self.with_reply_mode(|c| c.reject(Some(idx), &msg));
                return;
            }
            // Refused inside MULTI: EXEC will answer EXECABORT, as Redis does.
            if let Some(m) = &mut self.multi {
                m.error = true;
            }
            let msg = self.shared.scripts.busy_error();
            self.with_reply_mode(|c| c.reject(Some(idx), msg));
            return;
        }
        if !self.authenticated && !spec.has_flag("no_auth") {
            if self.shared.config.hot.auth_required.load(Ordering::Relaxed) {
                self.flush_pending().await;
                self.with_reply_mode(|c| c.reject(Some(idx), errors::NOAUTH));
                return;
            }
            self.authenticated = true;
        }
        if self.reply.proto == Proto::Resp2
            && self.info.subscribed()
            && !matches!(
                spec.name,
                "ping"
                    | "subscribe"
                    | "ssubscribe"
                    | "unsubscribe"
                    | "sunsubscribe"
                    | "psubscribe"
                    | "punsubscribe"
                    | "quit"
                    | "reset"
            )
        {
            // RESP2 has no way to tell a reply from a message: Redis allows only these.
            self.flush_pending().await;
            let msg = format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                self.subcommand.unwrap_or(spec.name)
            );
            self.with_reply_mode(|c| c.reject(Some(idx), &msg));
            return;
        }
        if spec.has_flag("write") && self.shared.repl.read_only_for(&self.shared, self.info.id) {
            // A read-only replica: only the primary's stream writes (Redis's check comes
            // before MULTI queues the command, whose EXEC then aborts).
            self.flush_pending().await;
            if let Some(m) = &mut self.multi {
                m.error = true;
            }
            self.with_reply_mode(|c| c.reject(Some(idx), crate::replica::READONLY));
            return;
        }
        if self.multi.is_some()
            && !matches!(
                spec.name,
                "exec" | "discard" | "multi" | "watch" | "reset" | "quit"
            )
        {
            self.flush_pending().await;
            if spec.has_flag("no_multi") {
                if let Some(m) = &mut self.multi {
                    m.error = true;
                }
                self.with_reply_mode(|c| {
                    c.reject(Some(idx), "ERR Command not allowed inside a transaction")
                });
                return;
            }
            let m = self.multi.as_mut().expect("in MULTI");
            // EXEC runs these inside its transaction (`run_in_txn`, which holds every
            // worker when one is queued); the others cannot be queued yet.
            let queueable = |cmd: AsyncCmd| {
                use AsyncCmd::*;
                matches!(
                    cmd,
                    Sort | Eval
                        | Keys
                        | Scan
                        | Dbsize
                        | Randomkey
                        | Flushdb
                        | Flushall
                        | Info
                        | Publish
                        | Spublish
                        | Pubsub
                        | Swapdb
                        | Config
                        | Slowlog
                        | Wait
                        | Waitaof
                        | Migrate
                        | Bgsave
                        | Debug
                )
            };
            if matches!(spec.handler, Handler::Async(cmd) if !queueable(cmd)) {
                m.error = true;
                let msg = format!(
                    "ERR '{}' inside MULTI is not supported by Skerry yet",
                    spec.name
                );
                self.with_reply_mode(|c| c.reject(Some(idx), &msg));
                return;
            }
            m.queue
                .push((idx, argv.iter().map(|a| a.to_vec()).collect()));
            self.info.multi.set(m.queue.len() as i64);
            self.with_reply_mode(|c| c.reply.simple("QUEUED"));
            return;
        }
        if crate::memory::over_maxmemory() && spec.has_flag("denyoom") {
            // Over maxmemory with the value cache already given up: Redis's refusal.
            self.flush_pending().await;
            self.with_reply_mode(|c| c.reply.error(crate::memory::OOM_ERROR));
            return;
        }
        if spec.has_flag("denyoom") && crate::space::writes_must_wait() {
            // Nearly full data devices: wait for room rather than fail; a write backlog
            // over its bound: wait for a sync (crate::space).
            self.flush_pending().await;
            crate::space::wait_before_write(&self.shared).await;
        }
        // A big value (longer than a chunk) takes many blocks at once: wait for them (a
        // growing data file grows) rather than fail (keyspace/chunked.rs).
        let blocks = crate::space::command_write_blocks(spec.name, argv);
        if blocks > 0 && spec.has_flag("denyoom") {
            self.flush_pending().await;
            crate::space::wait_for_blocks(&self.shared, blocks).await;
        }
        match spec.handler {
            Handler::Keyed { .. }
                if spec.has_flag("blocking") && self.owner(spec, argv).is_some() =>
            {
                let w = self.owner(spec, argv).expect("checked");
                self.run_blocking(w, idx, argv).await;
            }
            Handler::Keyed { cross, .. } => match self.owner(spec, argv) {
                Some(w) if w == self.worker => {
                    // Not a barrier: commands queued for other workers run there in
                    // parallel, their replies keep their place (crate::hop).
                    let shard = local_shard();
                    // A command on the collection left behind needs no residency check
                    // (decision 0035), unless it must first wait for a transaction, which
                    // may write that collection and let it go from RAM meanwhile.
                    if commands::reads_values(idx, argv)
                        && (shard.borrow().hold.is_some()
                            || !crate::hop::leaves_behind(&shard.borrow(), idx, self.db, argv))
                    {
                        let keys = key_args(idx, argv);
                        let read_mark = Some(shard.borrow().keyspace.read_mark());
                        let needs = commands::stream::needs_of(&shard.borrow(), idx, argv);
                        loop {
                            if shard.borrow().hold.is_some() {
                                wait_local_unheld().await;
                            }
                            match crate::keyspace::make_resident_need(
                                self.db,
                                &keys,
                                needs.as_deref(),
                                self.now_ms,
                                read_mark,
                            )
                            .await
                            {
                                Ok(false) => break,
                                // It waited: the values are resident now (it checked
                                // after its last read), but a transaction may hold the
                                // worker now; then the values are checked again after it.
                                Ok(true) if shard.borrow().hold.is_none() => break,
                                Ok(true) => continue,
                                Err(e) => {
                                    let mark = self.reply.buf.len();
                                    exec_failed(&mut shard.borrow_mut(), idx, &mut self.reply, &e);
                                    self.apply_reply_mode(mark);
                                    return;
                                }
                            }
                        }
                    } else if shard.borrow().hold.is_some() {
                        wait_local_unheld().await;
                    }
                    let mut s = shard.borrow_mut();
                    let mark = self.reply.buf.len();
                    if let Some(req) = exec_keyed(
                        &mut s,
                        idx,
                        self.db,
                        self.now_ms,
                        &mut self.reply,
                        argv,
                        self.info.id,
                        self.info.no_touch.get(),
                        true,
                    ) {
                        crate::blocking::timeout_reply(&mut self.reply, req.on_timeout);
                    }
                    drop(s);
                    self.apply_reply_mode(mark);
                }
                Some(w) => self.forward(w, idx, argv).await,
                None => {
                    self.flush_pending().await;
                    match cross {
                        // Boxed: see `Handler::Async` below.
                        Some(cmd) => Box::pin(self.run_async(idx, cmd, argv)).await,
                        None if matches!(
                            spec.group,
                            "hash"
                                | "list"
                                | "set"
                                | "sorted-set"
                                | "bitmap"
                                | "geo"
                                | "hyperloglog"
                                | "stream"
                        ) =>
                        {
                            let mark = self.reply.buf.len();
                            self.info.blocked_in_command.set(true);
                            Box::pin(self.cross_keyed(idx, argv)).await;
                            self.info.blocked_in_command.set(false);
                            self.apply_reply_mode(mark);
                        }
                        None => self.with_reply_mode(|c| {
                            c.reject(
                                Some(idx),
                                "CROSSSLOT Keys in request don't hash to the same slot",
                            )
                        }),
                    }
                }
            },
            Handler::Conn(f) => {
                self.flush_pending().await;
                let started = quanta::Instant::now();
                let mark = self.reply.buf.len();
                f(self, argv);
                self.finish_local(idx, argv, started, mark);
            }
            Handler::Async(cmd) => {
                self.flush_pending().await;
                // Boxed, as below: the futures of these commands are large (8 KiB), and
                // inline they would size every connection's task, idle ones included
                // (docs/decisions/0018-connection-memory.md).
                Box::pin(self.run_async(idx, cmd, argv)).await;
            }
        }
    }

    fn with_reply_mode(&mut self, f: impl FnOnce(&mut Conn)) {
        let mark = self.reply.buf.len();
        f(self);
        self.apply_reply_mode(mark);
    }

    /// Drops the reply written since `mark` when CLIENT REPLY says so.
    fn apply_reply_mode(&mut self, mark: usize) {
        if std::mem::take(&mut self.pushing) {
            // Pub/sub notifications go out whatever CLIENT REPLY says; a SKIP is used up.
            self.reply_mode = match self.reply_mode {
                ReplyMode::Skip => ReplyMode::SkipThis,
                ReplyMode::SkipThis => ReplyMode::On,
                m => m,
            };
            return;
        }
        match self.reply_mode {
            ReplyMode::On => {}
            ReplyMode::Off => self.reply.buf.truncate(mark),
            ReplyMode::SkipThis => {
                self.reply.buf.truncate(mark);
                self.reply_mode = ReplyMode::On;
            }
            ReplyMode::Skip => self.reply_mode = ReplyMode::SkipThis,
        }
    }

    fn finish_local(&mut self, idx: usize, argv: &[&[u8]], started: quanta::Instant, mark: usize) {
        {
            let shard = local_shard();
            let mut s = shard.borrow_mut();
            let ns = record(
                &mut s,
                idx,
                self.subcommand,
                started,
                &self.reply.buf[mark..],
            );
            crate::slowlog::note(&mut s, idx, argv, self.info.id, ns);
        }
        self.apply_reply_mode(mark);
    }

    async fn run_async(&mut self, idx: usize, cmd: AsyncCmd, argv: &[&[u8]]) {
        use crate::commands::{connection as c, keyspace as k, server as sv};
        let started = quanta::Instant::now();
        let mut mark = self.reply.buf.len();
        self.info.blocked_in_command.set(true);
        if matches!(cmd, AsyncCmd::Wait | AsyncCmd::Waitaof) {
            // They may wait long (see `Conn::block_until`): the replies before them leave
            // now, so their own starts a fresh buffer.
            self.send_replies_before_wait().await;
            mark = self.reply.buf.len();
        }
        match cmd {
            AsyncCmd::Mget => s_cross::mget(self, argv).await,
            AsyncCmd::Mset => s_cross::mset(self, argv, false).await,
            AsyncCmd::Msetnx => s_cross::mset(self, argv, true).await,
            AsyncCmd::Del => s_cross::count(self, idx, argv).await,
            AsyncCmd::Exists => s_cross::count(self, idx, argv).await,
            AsyncCmd::Lcs => s_cross::lcs(self, argv).await,
            AsyncCmd::Keys => k::keys(self, argv).await,
            AsyncCmd::Scan => k::scan(self, argv).await,
            AsyncCmd::Dbsize => k::dbsize(self).await,
            AsyncCmd::Flushdb => k::flushdb(self, argv).await,
            AsyncCmd::Flushall => k::flushall(self, argv).await,
            AsyncCmd::Randomkey => k::randomkey(self).await,
            AsyncCmd::Rename => k::rename_cross(self, argv).await,
            AsyncCmd::Copy => k::copy_cross(self, argv).await,
            AsyncCmd::Info => sv::info(self, argv).await,
            AsyncCmd::Config => sv::config(self, argv).await,
            AsyncCmd::Client => c::client(self, argv).await,
            AsyncCmd::Exec => self.exec_multi().await,
            AsyncCmd::Watch => self.watch_keys(&argv[1..]).await,
            AsyncCmd::Sort => crate::commands::sort::sort(self, argv).await,
            AsyncCmd::Eval => crate::scripting::eval(self, argv).await,
            AsyncCmd::Publish => {
                crate::commands::pubsub::publish(self, argv, crate::pubsub::Space::Global).await
            }
            AsyncCmd::Spublish => {
                crate::commands::pubsub::publish(self, argv, crate::pubsub::Space::Shard).await
            }
            AsyncCmd::Pubsub => crate::commands::pubsub::pubsub(self, argv).await,
            AsyncCmd::Swapdb => k::swapdb(self, argv).await,
            AsyncCmd::Slowlog => sv::slowlog(self, argv).await,
            AsyncCmd::Migrate => crate::commands::migrate::migrate(self, argv).await,
            AsyncCmd::Wait => crate::commands::replication::wait(self, argv).await,
            AsyncCmd::Waitaof => crate::commands::replication::waitaof(self, argv).await,
            AsyncCmd::Save => crate::commands::rdb::save(self, argv).await,
            AsyncCmd::Bgsave => crate::commands::rdb::bgsave(self, argv).await,
            AsyncCmd::Debug => self.debug(argv).await,
        }
        self.info.blocked_in_command.set(false);
        self.sync_multi_worker_writes(COMMANDS[idx].has_flag("write"))
            .await;
        self.finish_local(idx, argv, started, mark);
    }

    /// DEBUG: RELOAD reads and writes the whole dataset (`commands::rdb`); the other
    /// subcommands run at once.
    async fn debug(&mut self, argv: &[&[u8]]) {
        if argv.len() >= 2 && argv[1].eq_ignore_ascii_case(b"reload") {
            crate::commands::rdb::debug_reload(self, argv).await;
        } else if argv.len() == 2 && argv[1].eq_ignore_ascii_case(b"digest") {
            crate::commands::digest::digest(self).await;
        } else if argv.len() >= 2 && argv[1].eq_ignore_ascii_case(b"digest-value") {
            crate::commands::digest::digest_value(self, argv).await;
        } else {
            crate::commands::server::debug(self, argv);
        }
    }

    /// Queues a keyed command for worker `w`: the commands of a turn for one worker travel
    /// together in one message, sent at the end of the turn or at the next barrier.
    async fn forward(&mut self, w: usize, idx: usize, argv: &[&[u8]]) {
        if self.reply_mode != ReplyMode::On {
            // Its reply may be dropped: it goes alone (see `Conn::flush_pending`).
            self.flush_pending().await;
        }
        let queued = self.hops.queue(w, idx, self.db, argv, self.reply.buf.len());
        if self.reply_mode != ReplyMode::On || queued > 1 << 20 {
            self.flush_pending().await;
        }
    }

    /// Sends the queued commands to their workers without waiting for their replies
    /// (see [`Conn::flush_pending`]).
    pub fn send_pending(&mut self) {
        self.hops.send(
            self.worker,
            self.info.id,
            self.reply.proto,
            self.now_ms,
            self.info.no_touch.get(),
        );
    }

    /// Sends queued commands to their workers and puts their replies in place: a barrier,
    /// after which every earlier command of the connection has run.
    pub async fn flush_pending(&mut self) {
        if self.hops.is_empty() {
            return;
        }
        let mark = self.reply.buf.len();
        self.send_pending();
        self.hops.gather(&mut self.reply.buf).await;
        // With CLIENT REPLY OFF or SKIP the command is alone and its reply is last.
        self.apply_reply_mode(mark);
    }

    /// Runs keyed command `idx` whose keys live on several workers, atomically: every owner
    /// (and this worker) is held while [`Conn::cross_in_txn`] runs it.
    async fn cross_keyed(&mut self, idx: usize, argv: &[&[u8]]) {
        let workers = self.shared.workers;
        let mut owners: Vec<usize> = COMMANDS[idx]
            .key_positions(argv)
            .into_iter()
            .map(|p| slot::owner(argv[p], workers))
            .collect();
        owners.push(self.worker);
        let timeout = COMMANDS[idx]
            .has_flag("blocking")
            .then(|| crate::blocking::timeout_of(COMMANDS[idx].name, argv))
            .flatten();
        let started = Instant::now();
        let mut counted = false;
        // The arguments to run again with, when the command asked for others (XREAD's `$`).
        let mut again: Option<Vec<Vec<u8>>> = None;
        let out = loop {
            let txn = crate::worker::Txn::begin(&self.shared, self.worker, owners.clone()).await;
            let run: Vec<&[u8]> = match &again {
                Some(v) => v.iter().map(|a| &a[..]).collect(),
                None => argv.to_vec(),
            };
            let (out, wrote, wait) = self.cross_in_txn(&txn, idx, &run, false).await;
            let Some(block) = wait else {
                drop(txn);
                self.sync_multi_worker_writes(wrote).await;
                break out;
            };
            let wait_keys = block.keys;
            if block.argv.is_some() {
                again = block.argv;
            }
            // A blocking command that found nothing: a wake-up on each owner of its keys,
            // registered while they are all still held, then wait for one.
            let (tx, rx) = flume::unbounded::<Vec<u8>>();
            let regs = self.register_wake_ups(&txn, idx, wait_keys, tx).await;
            drop(txn);
            if !counted {
                counted = true;
                // Replies of the commands before it leave now: the client may wait long.
                self.ack_local_writes().await;
                if !self.reply.buf.is_empty() {
                    if let Some(out) = &self.outbox {
                        out.push(&mut self.reply.buf);
                    }
                }
                crate::netbuf::release_if_empty(&mut self.reply.buf);
                self.shared
                    .blocked_clients
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            let ended = self.wait_wake_up(&rx, timeout, started).await;
            for (w, state) in regs {
                if state.cancel() == Some(true) {
                    self.drop_cancelled_on(w);
                }
            }
            if let Some(reply) = ended {
                break reply;
            }
        };
        if counted {
            self.shared
                .blocked_clients
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.reply.buf.extend_from_slice(&out);
    }

    /// Has worker `w` drop the blocked-command registrations their connections cancelled.
    fn drop_cancelled_on(&self, w: usize) {
        let job: crate::worker::Job = Box::new(crate::blocking::drop_cancelled);
        if w == self.worker {
            job(&mut local_shard().borrow_mut());
        } else {
            let _ = self.shared.inboxes[w].send(crate::worker::Envelope::job(0, job));
        }
    }

    /// Registers a wake-up of blocking command `idx` on each owner of `keys`, the keys it
    /// waits on, inside `txn` (see `blocking::Waiter::wake_up`); their states, by worker.
    async fn register_wake_ups(
        &mut self,
        txn: &crate::worker::Txn,
        idx: usize,
        keys: Vec<Vec<u8>>,
        tx: flume::Sender<Vec<u8>>,
    ) -> Vec<(usize, Arc<crate::blocking::WaitState>)> {
        let workers = self.shared.workers;
        let (db, fd) = (self.db, self.info.fd);
        let mut by_owner: Vec<(usize, Vec<Vec<u8>>)> = Vec::new();
        for k in keys {
            let w = slot::owner(&k, workers);
            match by_owner.iter_mut().find(|(o, _)| *o == w) {
                Some((_, ks)) if !ks.contains(&k) => ks.push(k),
                Some(_) => {}
                None => by_owner.push((w, vec![k])),
            }
        }
        let mut regs = Vec::with_capacity(by_owner.len());
        for (w, keys) in by_owner {
            let state = Arc::new(crate::blocking::WaitState::default());
            let (st, tx) = (state.clone(), tx.clone());
            txn.run(w, move |s| {
                let waiter = crate::blocking::Waiter::wake_up(db, idx, keys, tx, st, fd);
                crate::blocking::register(s, waiter);
            })
            .await;
            regs.push((w, state));
        }
        regs
    }

    /// Waits for a wake-up on `rx` (None: run the command again), or answers the time-out,
    /// CLIENT UNBLOCK or a disconnect (Some(reply); empty when the client is gone), for a
    /// blocking command waiting on several workers since `started`.
    async fn wait_wake_up(
        &mut self,
        rx: &flume::Receiver<Vec<u8>>,
        timeout: Option<(u64, crate::commands::TimeoutReply)>,
        started: Instant,
    ) -> Option<Vec<u8>> {
        let proto = self.reply.proto;
        let limit = match timeout {
            Some((ms, _)) if ms > 0 => Some(Duration::from_millis(ms)),
            _ => None,
        };
        self.info.in_blocking.set(true);
        let deadline = limit.map(|l| started + l);
        let end = {
            let recv = std::pin::pin!(rx.recv_async());
            crate::blocking::wait_for_reply(&self.info, recv, deadline).await
        };
        // A woken client that has gone must not run the command again: it would pop an
        // element nobody reads (a wake-up sent with no message: an owner dropped it).
        let gone = || self.info.killed.get() || crate::blocking::peer_closed(self.info.fd);
        let out = match end {
            WaitEnd::Reply(_) if !gone() => None,
            WaitEnd::Reply(_) | WaitEnd::Gone => {
                self.close_after_reply = true;
                Some(Vec::new())
            }
            WaitEnd::TimedOut => Some(ended_wait_reply(proto, self.info.unblock.get(), timeout)),
        };
        self.info.in_blocking.set(false);
        self.info.unblock.set(0);
        out
    }

    /// Under `appendfsync always`, when a multi-worker command `wrote`, makes every
    /// worker's part durable before the reply goes out.
    pub(crate) async fn sync_multi_worker_writes(&self, wrote: bool) {
        if wrote
            && crate::persist::durability(&self.shared.config) == skerry_store::Durability::Always
        {
            crate::worker::sync_all(&self.shared, self.worker).await;
        }
    }

    /// Runs keyed command `idx` with keys on several workers inside `txn`, which holds them
    /// all and this worker: the keys' values are lent to this worker's keyspace, the handler
    /// runs on them, and each changed key goes back to its owner, writes before deletions
    /// (see `keyspace::lent`). Returns the reply, whether anything was written, and, when a
    /// blocking command found nothing and must wait (outside MULTI; inside, it answers as
    /// Redis does there), the keys it waits on (not BLMOVE's destination).
    async fn cross_in_txn(
        &mut self,
        txn: &crate::worker::Txn,
        idx: usize,
        argv: &[&[u8]],
        in_multi: bool,
    ) -> (Vec<u8>, bool, Option<crate::commands::BlockRequest>) {
        let spec = &COMMANDS[idx];
        let (db, now) = (self.db, self.now_ms);
        let workers = self.shared.workers;
        let proto = self.reply.proto;
        let err = |msg: &str| {
            let mut r = Reply::new(proto);
            r.error(&format!("ERR {msg}"));
            (r.buf, false, None)
        };
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for p in spec.key_positions(argv) {
            if !keys.iter().any(|k| k[..] == *argv[p]) {
                keys.push(argv[p].to_vec());
            }
        }
        let mut items = Vec::with_capacity(keys.len());
        for w in 0..workers {
            let group: Vec<Vec<u8>> = keys
                .iter()
                .filter(|k| slot::owner(k, workers) == w)
                .cloned()
                .collect();
            if group.is_empty() {
                continue;
            }
            let got = txn
                .run_resident(w, db, group.clone(), now, move |s| {
                    group
                        .into_iter()
                        .map(|k| {
                            let v = s.keyspace.peek(db, &k, now);
                            (k, v, s.keyspace.take_error())
                        })
                        .collect::<Vec<_>>()
                })
                .await;
            match got {
                Ok(list) => {
                    for (k, v, e) in list {
                        if let Some(e) = e {
                            return err(&e);
                        }
                        items.push((k, v));
                    }
                }
                Err(e) => return err(&e),
            }
        }
        let (changes, block, out) = {
            let shard = local_shard();
            let mut s = shard.borrow_mut();
            if let Err(e) = s.keyspace.lend(db, items) {
                return err(&e);
            }
            let mut reply = Reply::new(proto);
            let block = exec_keyed(
                &mut s,
                idx,
                db,
                now,
                &mut reply,
                argv,
                self.info.id,
                self.info.no_touch.get(),
                false,
            );
            let changes = s.keyspace.end_lend();
            (changes, block, reply.buf)
        };
        if let Some(block) = block {
            if in_multi {
                let mut r = Reply::new(proto);
                deny_blocking_reply(idx, &mut r);
                return (r.buf, false, None);
            }
            return (Vec::new(), false, Some(block));
        }
        let mut changes = changes;
        // Writes first, deletions last: a write refused on one worker (a full device)
        // leaves a copy too many rather than a value lost.
        changes.sort_by_key(|(_, v)| v.is_none());
        let wrote = !changes.is_empty();
        // Each owner's part is one unit for recovery (whole or absent after a crash).
        let mut owners: Vec<usize> = changes
            .iter()
            .map(|(k, _)| slot::owner(k, workers))
            .collect();
        owners.sort_unstable();
        owners.dedup();
        for &w in &owners {
            txn.run(w, |s| s.keyspace.begin_command(true)).await;
        }
        let mut failure = None;
        for (key, value) in changes {
            let w = slot::owner(&key, workers);
            let failed = txn
                .run(w, move |s| {
                    // Counted as changes when the command made them (on the lent keys).
                    let dirty_before = s.keyspace.stats.dirty;
                    let ok = s.keyspace.apply_lent(db, &key, value, now);
                    s.keyspace.count_changes_as(dirty_before, 0);
                    let e = s.keyspace.take_error();
                    (!ok).then(|| e.unwrap_or_default())
                })
                .await;
            if let Some(e) = failed {
                failure = Some(e);
                break;
            }
        }
        for &w in &owners {
            let e = txn
                .run(w, |s| {
                    s.keyspace.end_command();
                    s.keyspace.take_error()
                })
                .await;
            if let Some(e) = e {
                failure.get_or_insert(e);
            }
        }
        if let Some(e) = failure {
            return (err(&e).0, true, None);
        }
        (out, wrote, None)
    }

    /// EXEC: runs the queued commands of MULTI atomically. Every worker is held for the
    /// whole transaction (so no other command interleaves); blocked clients are served
    /// once it is done, as in Redis. A WATCHed key changed since WATCH aborts it (null
    /// reply); an error while queueing aborts it with EXECABORT.
    pub async fn exec_multi(&mut self) {
        let Some(multi) = self.multi.take() else {
            self.reply.error("ERR EXEC without MULTI");
            return;
        };
        self.info.multi.set(-1);
        if multi.error {
            self.unwatch_all();
            self.reply
                .error("EXECABORT Transaction discarded because of previous errors.");
            return;
        }
        let workers = self.shared.workers;
        // Hold the owners of every key the transaction touches or watches (and this
        // worker, where multi-worker commands run); every worker when a queued command
        // works across the whole keyspace (SORT with patterns).
        let mut held: Vec<usize> = vec![self.worker];
        held.extend(self.watched.iter().map(|(_, k)| slot::owner(k, workers)));
        for (idx, args) in &multi.queue {
            let spec = &COMMANDS[*idx];
            match spec.handler {
                Handler::Keyed { .. } => {
                    let argv: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
                    held.extend(
                        spec.key_positions(&argv)
                            .into_iter()
                            .map(|p| slot::owner(argv[p], workers)),
                    );
                }
                // They do not block inside MULTI, and touch no worker.
                Handler::Conn(_) | Handler::Async(AsyncCmd::Wait | AsyncCmd::Waitaof) => {}
                Handler::Async(_) => held.extend(0..workers),
            }
        }
        held.sort_unstable();
        held.dedup();
        let txn = crate::worker::Txn::begin(&self.shared, self.worker, held.clone()).await;
        // Checked (and the watches dropped) only once every worker is held: a write of a
        // watched key can no longer slip in between the check and the queued commands.
        let dirty = self.cas_dirty();
        self.unwatch_all();
        if dirty {
            drop(txn);
            self.reply.null_array();
            return;
        }
        for &w in &held {
            // The whole transaction is one unit for recovery on each worker.
            txn.run(w, |s| s.keyspace.begin_command(true)).await;
        }
        self.reply.array(multi.queue.len());
        let mut wrote = false;
        self.in_exec = true;
        for (idx, args) in multi.queue {
            let proto = self.reply.proto;
            let (out, w) = self.run_in_txn(&txn, idx, args, proto).await;
            wrote |= w;
            match out {
                Some(buf) => self.reply.buf.extend_from_slice(&buf),
                None => self
                    .reply
                    .error("ERR this command cannot run inside MULTI in Skerry yet"),
            }
        }
        self.in_exec = false;
        self.pushing = false;
        for &w in &held {
            txn.run(w, |s| {
                s.keyspace.end_command();
                if let Some(e) = s.keyspace.take_error() {
                    tracing::error!("transaction end: {e}");
                }
            })
            .await;
        }
        drop(txn);
        self.sync_multi_worker_writes(wrote).await;
    }

    /// Runs command `idx` inside `txn`, which holds every worker it touches (EXEC's queued
    /// commands, a script's calls): its reply in protocol `proto`, and whether it wrote.
    /// `None` for a command that cannot run inside a transaction (one that visits every
    /// worker by itself). A blocking command does not wait: it answers as Redis does
    /// inside MULTI.
    pub(crate) async fn run_in_txn(
        &mut self,
        txn: &Txn,
        idx: usize,
        args: Vec<Vec<u8>>,
        proto: Proto,
    ) -> (Option<Vec<u8>>, bool) {
        let argv: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let spec = &COMMANDS[idx];
        match spec.handler {
            Handler::Keyed { .. } => match self.owner(spec, &argv) {
                Some(w) => {
                    let keys: Vec<Vec<u8>> =
                        key_args(idx, &argv).iter().map(|k| k.to_vec()).collect();
                    let (db, now, client) = (self.db, self.now_ms, self.info.id);
                    let no_touch = self.info.no_touch.get();
                    drop(argv);
                    let out = txn
                        .run_resident(w, db, keys, now, move |s| {
                            let argv: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
                            let mut r = Reply::lazy(proto);
                            let writes = s.keyspace.writes();
                            if exec_keyed(s, idx, db, now, &mut r, &argv, client, no_touch, false)
                                .is_some()
                            {
                                deny_blocking_reply(idx, &mut r);
                            }
                            (r.buf, s.keyspace.writes() != writes)
                        })
                        .await;
                    match out {
                        Ok((buf, wrote)) => (Some(buf), wrote),
                        Err(e) => {
                            let mut r = Reply::lazy(proto);
                            r.error(&format!("ERR {e}"));
                            (Some(r.buf), false)
                        }
                    }
                }
                None => {
                    let saved = std::mem::replace(&mut self.reply.proto, proto);
                    let (out, w, _) = self.cross_in_txn(txn, idx, &argv, true).await;
                    self.reply.proto = saved;
                    (Some(out), w)
                }
            },
            Handler::Conn(f) => {
                let saved = std::mem::replace(&mut self.reply, Reply::lazy(proto));
                f(self, &argv);
                let out = std::mem::replace(&mut self.reply, saved);
                (Some(out.buf), false)
            }
            Handler::Async(AsyncCmd::Sort) => {
                let saved = std::mem::replace(&mut self.reply, Reply::lazy(proto));
                let wrote = crate::commands::sort::sort_in_txn(self, txn, &argv).await;
                let out = std::mem::replace(&mut self.reply, saved);
                (Some(out.buf), wrote)
            }
            Handler::Async(AsyncCmd::Eval) => {
                // Inside EXEC, which holds every worker when an EVAL is queued.
                let saved = std::mem::replace(&mut self.reply, Reply::lazy(proto));
                let wrote = match crate::scripting::prepare(self, &argv) {
                    Ok(p) => Box::pin(crate::scripting::run_in_txn(self, txn, p)).await,
                    Err(e) => {
                        self.reply.error(&e);
                        false
                    }
                };
                let out = std::mem::replace(&mut self.reply, saved);
                (Some(out.buf), wrote)
            }
            Handler::Async(AsyncCmd::Wait | AsyncCmd::Waitaof) => {
                let mut r = Reply::lazy(proto);
                crate::commands::replication::reply_without_blocking(
                    self, spec.name, &argv, &mut r,
                );
                (Some(r.buf), false)
            }
            Handler::Async(cmd) if txn.holds_all() => {
                use crate::commands::{keyspace as k, pubsub as ps, server as sv};
                let saved = std::mem::replace(&mut self.reply, Reply::lazy(proto));
                let ambient = std::mem::replace(&mut self.ambient_txn, txn.id());
                let ran = match cmd {
                    AsyncCmd::Keys => {
                        Box::pin(k::keys(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Scan => {
                        Box::pin(k::scan(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Dbsize => {
                        Box::pin(k::dbsize(self)).await;
                        true
                    }
                    AsyncCmd::Randomkey => {
                        Box::pin(k::randomkey(self)).await;
                        true
                    }
                    AsyncCmd::Flushdb => {
                        Box::pin(k::flushdb(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Flushall => {
                        Box::pin(k::flushall(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Swapdb => {
                        Box::pin(k::swapdb(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Info => {
                        Box::pin(sv::info(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Publish => {
                        Box::pin(ps::publish(self, &argv, crate::pubsub::Space::Global)).await;
                        true
                    }
                    AsyncCmd::Spublish => {
                        Box::pin(ps::publish(self, &argv, crate::pubsub::Space::Shard)).await;
                        true
                    }
                    AsyncCmd::Pubsub => {
                        Box::pin(ps::pubsub(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Config => {
                        Box::pin(sv::config(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Slowlog => {
                        Box::pin(sv::slowlog(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Migrate => {
                        Box::pin(crate::commands::migrate::migrate_in_txn(self, txn, &argv)).await;
                        true
                    }
                    AsyncCmd::Bgsave => {
                        Box::pin(crate::commands::rdb::bgsave(self, &argv)).await;
                        true
                    }
                    AsyncCmd::Debug => {
                        Box::pin(self.debug(&argv)).await;
                        true
                    }
                    _ => false,
                };
                self.ambient_txn = ambient;
                let out = std::mem::replace(&mut self.reply, saved);
                let wrote = matches!(
                    cmd,
                    AsyncCmd::Flushdb
                        | AsyncCmd::Flushall
                        | AsyncCmd::Swapdb
                        | AsyncCmd::Migrate
                        | AsyncCmd::Debug
                );
                (ran.then_some(out.buf), wrote)
            }
            Handler::Async(_) => (None, false),
        }
    }

    /// True when a key this connection WATCHes changed since WATCH.
    fn cas_dirty(&self) -> bool {
        self.cas_flag.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// WATCH key...: each key's owner sets this connection's flag on any change.
    pub async fn watch_keys(&mut self, keys: &[&[u8]]) {
        if self.multi.is_some() {
            self.reply.error("ERR WATCH inside MULTI is not allowed");
            return;
        }
        let db = self.db;
        for k in keys {
            let w = slot::owner(k, self.shared.workers);
            let key = k.to_vec();
            let flag = self.cas_flag.clone();
            self.on(w, move |s| s.keyspace.watch_cas(db, &key, flag))
                .await;
            self.watched.push((db, k.to_vec()));
        }
        self.reply.ok();
    }

    /// Forgets every WATCH of this connection (UNWATCH, EXEC, DISCARD, disconnect).
    pub fn unwatch_all(&mut self) {
        let workers = self.shared.workers;
        for (db, key) in std::mem::take(&mut self.watched) {
            let w = slot::owner(&key, workers);
            let flag = self.cas_flag.clone();
            let job: crate::worker::Job =
                Box::new(move |s: &mut Shard| s.keyspace.unwatch_cas(db, &key, &flag));
            if w == self.worker {
                job(&mut local_shard().borrow_mut());
            } else {
                let _ = self.shared.inboxes[w].send(crate::worker::Envelope::job(0, job));
            }
        }
        self.cas_flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    }

    /// Runs blocking command `idx` on its owner `w` as a batch of its own, then waits for its
    /// reply until its time-out, the client's disconnect or a CLIENT KILL (see
    /// `crate::blocking`).
    async fn run_blocking(&mut self, w: usize, idx: usize, argv: &[&[u8]]) {
        self.send_replies_before_wait().await;
        let timeout = crate::blocking::timeout_of(COMMANDS[idx].name, argv);
        let state = Arc::new(crate::blocking::WaitState::default());
        let proto = self.reply.proto;
        let now_ms = self.now_ms;
        let (tx, rx) = flume::bounded::<Vec<u8>>(1);
        let mut p = crate::hop::Pending::take(w);
        p.client = self.info.id;
        p.push(idx, self.db, argv);
        let wait = (state.clone(), self.info.fd);
        self.submit_job(
            w,
            crate::hop::blocking_job(p, proto, now_ms, self.info.no_touch.get(), tx, wait),
        )
        .await;
        let started = Instant::now();
        // Not idle while blocked (the `timeout` config spares it, as Redis does).
        self.info.blocked_in_command.set(true);
        self.info.in_blocking.set(true);
        self.info.unblock.set(0);
        let limit = match timeout {
            Some((ms, _)) if ms > 0 => Some(Duration::from_millis(ms)),
            _ => None,
        };
        let deadline = limit.map(|l| started + l);
        let end = {
            let recv = std::pin::pin!(rx.recv_async());
            crate::blocking::wait_for_reply(&self.info, recv, deadline).await
        };
        let out = match end {
            WaitEnd::Reply(r) => r.ok(),
            WaitEnd::TimedOut | WaitEnd::Gone => {
                let served = match state.cancel() {
                    Some(registered) => {
                        if registered {
                            self.shared
                                .blocked_clients
                                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                            self.drop_cancelled_on(w);
                        }
                        None
                    }
                    // Served, or being run for it right now: its reply, or an empty message
                    // when the run found nothing (the owner dropped the wait then).
                    None => rx.recv_async().await.ok().filter(|r| !r.is_empty()),
                };
                match served {
                    Some(r) => Some(r),
                    None if matches!(end, WaitEnd::Gone) => {
                        self.close_after_reply = true;
                        Some(Vec::new())
                    }
                    None => {
                        let unblocked = self.info.unblock.get();
                        let out = ended_wait_reply(proto, unblocked, timeout);
                        // Its one call, answered here (Redis's updateStatsOnUnblock).
                        record_unblocked(&mut local_shard().borrow_mut(), idx, &out);
                        Some(out)
                    }
                }
            }
        };
        self.info.blocked_in_command.set(false);
        self.info.in_blocking.set(false);
        self.info.unblock.set(0);
        // Its reply is an interaction (Redis updates `lastinteraction` on writes): the idle
        // timeout must not close it the moment a long wait ends.
        self.info.last_interaction.set(Instant::now());
        let mark = self.reply.buf.len();
        if let Some(out) = out {
            self.reply.buf.extend_from_slice(&out);
        }
        self.apply_reply_mode(mark);
    }

    /// Before a command that may wait a long time: the replies of the commands before it
    /// leave now.
    async fn send_replies_before_wait(&mut self) {
        self.flush_pending().await;
        self.ack_local_writes().await;
        if !self.reply.buf.is_empty() {
            if let Some(out) = &self.outbox {
                out.push(&mut self.reply.buf);
            }
        }
        crate::netbuf::release_if_empty(&mut self.reply.buf);
    }

    /// Blocks the client (flag `b`, counted in `blocked_clients`) until `deadline` (None:
    /// no limit), CLIENT UNBLOCK ([`ClientInfo::unblock`] says how; `TimedOut`) or its
    /// disconnect (`Gone`, and the connection closes): WAIT and WAITAOF for replicas.
    /// The replies before the command have left already (`Conn::run_async`).
    pub(crate) async fn block_until(&mut self, deadline: Option<Instant>) -> WaitEnd<()> {
        use std::sync::atomic::Ordering::Relaxed;
        self.info.blocked_in_command.set(true);
        self.info.in_blocking.set(true);
        self.info.unblock.set(0);
        self.shared.blocked_clients.fetch_add(1, Relaxed);
        let end = {
            let never = std::pin::pin!(std::future::pending::<()>());
            crate::blocking::wait_for_reply(&self.info, never, deadline).await
        };
        self.shared.blocked_clients.fetch_sub(1, Relaxed);
        self.info.in_blocking.set(false);
        self.info.last_interaction.set(Instant::now());
        if matches!(end, WaitEnd::Gone) {
            self.close_after_reply = true;
        }
        end
    }

    /// Runs `job` on worker `w`: inline once no transaction holds it when `w` is this
    /// worker, else through `w`'s inbox.
    async fn submit_job(&self, w: usize, job: crate::worker::Job) {
        if w == self.worker {
            if local_shard().borrow().hold.is_some() {
                wait_local_unheld().await;
            }
            job(&mut local_shard().borrow_mut());
        } else if self.shared.inboxes[w]
            .send(crate::worker::Envelope::job(0, job))
            .is_err()
        {
            panic!("worker {w} has stopped");
        }
    }

    /// Makes the replies written so far ready to leave: sends the commands queued for other
    /// workers, and under `appendfsync always` makes this worker's appended records durable
    /// (group commit) while they run, then puts their replies in place (each owner answers
    /// once its own log is durable). Other policies only wait for the replies.
    pub async fn ack_local_writes(&mut self) {
        self.send_pending();
        if std::mem::take(&mut self.local_writes) {
            let log = local_shard().borrow().keyspace.log().clone();
            if let Err(e) = log.ack().await {
                tracing::error!("data file sync failed: {e}");
            }
        }
        // (Under CLIENT REPLY OFF or SKIP nothing is in flight here: such a command is
        // flushed alone, see `Conn::forward`.)
        self.hops.gather(&mut self.reply.buf).await;
    }
}

/// Records appended so far on this worker's log (see `Keyspace::writes`).
fn local_writes_count() -> u64 {
    crate::worker::with_local_shard(|s| s.borrow().keyspace.writes())
}

/// Cross-worker versions of multi-key string and keyspace commands: split the keys by owner,
/// run each part on its worker, and merge the replies.
mod s_cross {
    use super::*;
    use crate::keyspace::{Expiry, Value};

    /// Holds every worker owning one of `keys` for one atomic multi-worker step.
    pub async fn hold_owners<'k>(c: &Conn, keys: impl Iterator<Item = &'k [u8]>) -> Txn {
        let workers: Vec<usize> = keys.map(|k| slot::owner(k, c.shared.workers)).collect();
        Txn::begin(&c.shared, c.worker, workers)
            .await
            .with_no_touch(c.info.no_touch.get())
    }

    fn group_by_owner(
        c: &Conn,
        keys: impl Iterator<Item = (usize, Vec<u8>)>,
    ) -> Vec<Vec<(usize, Vec<u8>)>> {
        let mut groups = vec![Vec::new(); c.shared.workers];
        for (pos, k) in keys {
            let w = slot::owner(&k, c.shared.workers);
            groups[w].push((pos, k));
        }
        groups
    }

    /// MGET across workers.
    pub async fn mget(c: &mut Conn, argv: &[&[u8]]) {
        let txn = hold_owners(c, argv[1..].iter().copied()).await;
        let keys = argv[1..].iter().enumerate().map(|(i, k)| (i, k.to_vec()));
        let groups = group_by_owner(c, keys);
        let mut values: Vec<Option<Vec<u8>>> = vec![None; argv.len() - 1];
        let (db, now) = (c.db, c.now_ms);
        for (w, group) in groups.into_iter().enumerate() {
            if group.is_empty() {
                continue;
            }
            let keys: Vec<Vec<u8>> = group.iter().map(|(_, k)| k.clone()).collect();
            let got = txn
                .run_resident(w, db, keys, now, move |s| {
                    group
                        .into_iter()
                        .map(|(i, k)| {
                            let v = match s.keyspace.get(db, &k, now).map(|g| g.value) {
                                Some(Value::Str(v)) => Some(v),
                                _ => None,
                            };
                            (i, v)
                        })
                        .collect::<Vec<_>>()
                })
                .await;
            match got {
                Ok(got) => {
                    for (i, v) in got {
                        values[i] = v;
                    }
                }
                Err(e) => {
                    c.reply.error(&format!("ERR {e}"));
                    return;
                }
            }
        }
        c.reply.array(values.len());
        for v in values {
            match v {
                Some(v) => c.reply.bulk(&v),
                None => c.reply.null(),
            }
        }
    }

    /// MSET / MSETNX across workers.
    pub async fn mset(c: &mut Conn, argv: &[&[u8]], nx: bool) {
        let name = if nx { "msetnx" } else { "mset" };
        if !crate::commands::string::pairs_ok(&mut c.reply, argv, name) {
            return;
        }
        let txn = hold_owners(c, argv[1..].iter().step_by(2).copied()).await;
        let (db, now) = (c.db, c.now_ms);
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = argv[1..]
            .chunks(2)
            .map(|kv| (kv[0].to_vec(), kv[1].to_vec()))
            .collect();
        let mut groups: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); c.shared.workers];
        for (k, v) in pairs {
            let w = slot::owner(&k, c.shared.workers);
            groups[w].push((k, v));
        }
        if nx {
            for (w, group) in groups.iter().enumerate() {
                if group.is_empty() {
                    continue;
                }
                let keys: Vec<Vec<u8>> = group.iter().map(|(k, _)| k.clone()).collect();
                let any = txn
                    .run(w, move |s| {
                        keys.iter().any(|k| s.keyspace.exists(db, k, now))
                    })
                    .await;
                if any {
                    c.reply.int(0);
                    return;
                }
            }
        }
        for (w, group) in groups.into_iter().enumerate() {
            if group.is_empty() {
                continue;
            }
            let refused = txn
                .run(w, move |s| {
                    for (k, v) in group {
                        if !s.keyspace.put(db, &k, &v, Expiry::Persist, now) {
                            return s.keyspace.take_error();
                        }
                    }
                    None
                })
                .await;
            if let Some(e) = refused {
                c.reply.error(&format!("ERR {e}"));
                return;
            }
        }
        if nx {
            c.reply.int(1);
        } else {
            c.reply.ok();
        }
    }

    /// DEL / UNLINK / EXISTS / TOUCH across workers: the sum of each worker's count.
    pub async fn count(c: &mut Conn, idx: usize, argv: &[&[u8]]) {
        let txn = hold_owners(c, argv[1..].iter().copied()).await;
        let keys = argv[1..].iter().enumerate().map(|(i, k)| (i, k.to_vec()));
        let groups = group_by_owner(c, keys);
        let (db, now) = (c.db, c.now_ms);
        let delete = matches!(COMMANDS[idx].name, "del" | "unlink");
        let touch = crate::commands::keyspace::touches(idx, c.info.no_touch.get());
        let mut total = 0i64;
        for (w, group) in groups.into_iter().enumerate() {
            if group.is_empty() {
                continue;
            }
            total += txn
                .run(w, move |s| {
                    s.keyspace.set_touch(touch);
                    let n = group
                        .iter()
                        .filter(|(_, k)| {
                            if delete {
                                s.keyspace.delete(db, k, now)
                            } else {
                                s.keyspace.exists(db, k, now)
                            }
                        })
                        .count() as i64;
                    s.keyspace.set_touch(true);
                    n
                })
                .await;
        }
        c.reply.int(total);
    }

    /// LCS with its two keys on different workers: fetch both values, compute here.
    pub async fn lcs(c: &mut Conn, argv: &[&[u8]]) {
        let txn = hold_owners(c, argv[1..3].iter().copied()).await;
        let (db, now) = (c.db, c.now_ms);
        let mut values = Vec::new();
        for key in &argv[1..3] {
            let k = key.to_vec();
            let w = slot::owner(&k, c.shared.workers);
            let probe = k.clone();
            let v: Result<Result<Vec<u8>, ()>, String> = txn
                .run_resident(w, db, vec![k], now, move |s| {
                    match s.keyspace.get(db, &probe, now).map(|g| g.value) {
                        None => Ok(Vec::new()),
                        Some(Value::Str(v)) => Ok(v),
                        Some(_) => Err(()),
                    }
                })
                .await;
            match v {
                Err(e) => {
                    c.reply.error(&format!("ERR {e}"));
                    return;
                }
                Ok(Ok(v)) => values.push(v),
                Ok(Err(())) => {
                    c.reply
                        .error("ERR The specified keys must contain string values");
                    return;
                }
            }
        }
        let shard = local_shard();
        let mut s = shard.borrow_mut();
        let s = &mut *s;
        let mut x = Exec {
            ks: &mut s.keyspace,
            db,
            now_ms: now,
            reply: &mut c.reply,
            config: &s.shared.config,
            block: None,
        };
        crate::commands::string::lcs_reply(&mut x, argv, &values[0], &values[1]);
    }
}

/// Redis 7.0's unknown-command error: the name (at most 128 bytes) and quoted arguments
/// until the list reaches 128 bytes.
fn unknown_command_message(argv: &[&[u8]]) -> Vec<u8> {
    let mut args: Vec<u8> = Vec::new();
    for a in &argv[1..] {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(&a[..a.len().min(room)]);
        args.extend_from_slice(b"' ");
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(&argv[0][..argv[0].len().min(128)]);
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend_from_slice(&args);
    msg
}

/// Text of an argument for an error message: at most `max` bytes, non-printables replaced.
fn sanitize(a: &[u8], max: usize) -> String {
    a.iter()
        .take(max)
        .map(|&b| {
            if (b' '..=b'~').contains(&b) {
                b as char
            } else {
                ' '
            }
        })
        .collect()
}

/// Accepts connections on one listener of this worker.
pub async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, worker: usize) {
    // Sets up the worker's read buffer ring now, so that a failure (an old kernel) is known
    // before the first connection reads.
    if let Err(e) = compio::runtime::Runtime::with_current(|rt| rt.buffer_pool()) {
        crate::netbuf::disable_ring(&e);
    }
    loop {
        match listener.accept().await {
            Ok((stream, addr)) => {
                if shared.stopping.load(Ordering::Relaxed) {
                    continue;
                }
                let _ = stream.set_nodelay(true);
                shared.total_connections.fetch_add(1, Ordering::Relaxed);
                let n = shared.connected_clients.fetch_add(1, Ordering::Relaxed) + 1;
                if n > shared.config.hot.maxclients.load(Ordering::Relaxed) {
                    shared.connected_clients.fetch_sub(1, Ordering::Relaxed);
                    shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
                    compio::runtime::spawn(async move {
                        let mut stream = stream;
                        let _ = stream
                            .write_all(&b"-ERR max number of clients reached\r\n"[..])
                            .await;
                    })
                    .detach();
                    continue;
                }
                compio::runtime::spawn(serve(stream, addr, shared.clone(), worker)).detach();
            }
            Err(e) => {
                tracing::warn!("accept: {e}");
                compio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Replies on their way to the socket, shared by a connection's reader and writer tasks.
///
/// The reader keeps parsing and running commands while the writer sends; the bytes queued
/// plus the bytes being written are the client's output buffer, which
/// `client-output-buffer-limit` bounds (as Redis does for clients that do not read).
#[derive(Default)]
pub struct Outbox {
    queued: RefCell<Vec<u8>>,
    in_flight: Cell<usize>,
    /// The reader is done: the writer sends what is queued and stops.
    closing: Cell<bool>,
    /// A write failed: the connection is gone.
    failed: Cell<bool>,
    writer_waker: Cell<Option<std::task::Waker>>,
    /// The connection is running a command: pub/sub messages wait in `deferred` and go out
    /// after the command's reply (Redis 8.0 holds a message a client publishes to itself in
    /// `pending_push_messages` until after the reply, MULTI/EXEC and scripts included).
    defer: Cell<bool>,
    deferred: RefCell<Vec<u8>>,
}

impl Outbox {
    /// Bytes queued or being written.
    pub fn pending(&self) -> usize {
        self.queued.borrow().len() + self.deferred.borrow().len() + self.in_flight.get()
    }

    /// Holds pub/sub messages back (see [`Outbox::end_deferring`]) while a command runs.
    fn start_deferring(&self) {
        self.defer.set(true);
    }

    /// Stops holding messages back and appends the ones held to `reply`, after the
    /// command's reply.
    fn end_deferring(&self, reply: &mut Vec<u8>) {
        self.defer.set(false);
        let mut d = self.deferred.borrow_mut();
        if !d.is_empty() {
            reply.extend_from_slice(&d);
            d.clear();
        }
    }

    /// True once a write failed: the connection is gone.
    pub fn failed(&self) -> bool {
        self.failed.get()
    }

    /// Queues a copy of `bytes` (a pub/sub message) behind what is queued.
    pub fn push_bytes(&self, bytes: &[u8]) {
        if self.defer.get() {
            self.deferred.borrow_mut().extend_from_slice(bytes);
            return;
        }
        let mut q = self.queued.borrow_mut();
        if q.capacity() == 0 {
            *q = crate::netbuf::take();
        }
        q.extend_from_slice(bytes);
        drop(q);
        self.wake_writer();
    }

    fn wake_writer(&self) {
        if let Some(w) = self.writer_waker.take() {
            w.wake();
        }
    }

    /// Moves `reply` into the queue (swapping buffers when the queue is empty).
    fn push(&self, reply: &mut Vec<u8>) {
        let mut q = self.queued.borrow_mut();
        if q.is_empty() {
            std::mem::swap(&mut *q, reply);
        } else {
            q.extend_from_slice(reply);
            reply.clear();
        }
        drop(q);
        self.wake_writer();
    }
}

/// Sends queued replies until the reader closes the outbox and the queue is empty. Each
/// buffer sent goes back to the worker's free list (`crate::netbuf`): a connection with
/// nothing to send holds none.
async fn writer(mut stream: TcpStream, out: Rc<Outbox>, shard: Rc<RefCell<Shard>>) {
    loop {
        std::future::poll_fn(|cx| {
            if !out.queued.borrow().is_empty() || out.closing.get() {
                std::task::Poll::Ready(())
            } else {
                out.writer_waker.set(Some(cx.waker().clone()));
                std::task::Poll::Pending
            }
        })
        .await;
        let buf = {
            let mut q = out.queued.borrow_mut();
            if q.is_empty() {
                break; // closing and nothing left
            }
            std::mem::take(&mut *q)
        };
        let n = buf.len();
        out.in_flight.set(n);
        let BufResult(res, buf) = stream.write_all(buf).await;
        out.in_flight.set(0);
        if res.is_err() {
            out.failed.set(true);
            break;
        }
        shard.borrow_mut().stats.net_output_bytes += n as u64;
        crate::netbuf::give(buf);
    }
    let _ = stream.shutdown().await;
}

/// Serves one client until it leaves, is killed, or breaks the protocol.
async fn serve(stream: TcpStream, addr: std::net::SocketAddr, shared: Arc<Shared>, worker: usize) {
    let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
    let laddr = stream.local_addr().unwrap_or(addr);
    let info = Rc::new(ClientInfo {
        id,
        addr,
        laddr,
        fd: stream.as_raw_fd(),
        worker,
        created: Instant::now(),
        last_interaction: Cell::new(Instant::now()),
        name: RefCell::new(Vec::new()),
        lib_name: RefCell::new(Vec::new()),
        lib_ver: RefCell::new(Vec::new()),
        db: Cell::new(0),
        resp: Cell::new(2),
        last_cmd: Cell::new("NULL"),
        qbuf: Cell::new(0),
        obuf: Cell::new(0),
        no_evict: Cell::new(false),
        no_touch: Cell::new(false),
        killed: Cell::new(false),
        blocked_in_command: Cell::new(false),
        in_blocking: Cell::new(false),
        unblock: Cell::new(0),
        blocked_waker: RefCell::new(None),
        multi: Cell::new(-1),
        user: RefCell::new("default"),
        subscriptions: Cell::new([0; 3]),
        over_soft_since: Cell::new(None),
    });
    let shard = local_shard();
    shard.borrow_mut().clients.insert(id, info.clone());
    let mut conn = Conn {
        shared: shared.clone(),
        worker,
        info: info.clone(),
        db: 0,
        // Taken from the worker's free list when a request arrives (`crate::netbuf`).
        reply: Reply {
            buf: Vec::new(),
            proto: Proto::Resp2,
        },
        authenticated: !shared.config.hot.auth_required.load(Ordering::Relaxed),
        reply_mode: ReplyMode::On,
        close_after_reply: false,
        now_ms: 0,
        subcommand: None,
        hops: Default::default(),
        local_writes: false,
        outbox: None,
        multi: None,
        cas_flag: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        watched: Vec::new(),
        subs: Default::default(),
        pushing: false,
        in_exec: false,
        ambient_txn: 0,
        in_script: false,
    };
    let outbox = Rc::new(Outbox::default());
    conn.outbox = Some(outbox.clone());
    let writer_task = compio::runtime::spawn(writer(stream.clone(), outbox.clone(), shard.clone()));
    read_loop(stream, &mut conn, &outbox, &shard).await;
    conn.unwatch_all();
    crate::commands::pubsub::drop_all(&mut conn);
    outbox.closing.set(true);
    outbox.wake_writer();
    let _ = writer_task.await;
    shard.borrow_mut().clients.remove(&id);
    shared.connected_clients.fetch_sub(1, Ordering::Relaxed);
}

/// Reads, parses and runs requests, handing replies to the writer, until the connection
/// should close.
///
/// Between requests the connection holds no buffer: its multishot receive takes one of the
/// worker's ring buffers when bytes arrive (see `crate::netbuf`), and the buffer goes back once
/// the requests in it have run. Only the start of a request that did not arrive whole moves
/// into `rbuf`, the connection's own buffer, which the next buffers received are appended to
/// until the request is complete. When the ring is empty (ENOBUFS ends the multishot
/// receive), one read goes straight into `rbuf`, and the receive is armed again after it.
async fn read_loop(
    mut stream: TcpStream,
    conn: &mut Conn,
    outbox: &Outbox,
    shard: &Rc<RefCell<Shard>>,
) {
    let shared = conn.shared.clone();
    let info = conn.info.clone();
    // Unparsed bytes of a request in progress from `start`; no capacity between requests.
    let mut rbuf: Vec<u8> = Vec::new();
    let mut start = 0usize;
    let mut parser = RequestParser::new();
    let mut ahead = crate::prefetch::Lookahead::default();
    // How much one read asks for: 16 KiB, doubled (up to READ_MAX) while reads fill what
    // they ask for (a client streaming a pipeline), so a turn, and under `appendfsync
    // always` its group commit and its hops, covers more commands (decision 0017).
    const READ_MIN: usize = 16 * 1024;
    const READ_MAX: usize = 256 * 1024;
    let mut read_size = READ_MIN;
    // Reads go to the worker's ring buffers through one multishot receive, armed once for
    // the connection (IORING_RECV_MULTISHOT; it re-arms itself if the kernel ends it): no
    // receive to submit, and no poll to arm, per request (decision 0031). The stream is
    // lazy: nothing is submitted until it is first polled, and it is polled only while the
    // ring is enabled.
    let mut rs = stream.clone();
    let mut multi = std::pin::pin!(rs.read_multi(0));
    let use_ring = crate::netbuf::ring_enabled();
    // What the receive gave next, already taken while the turn before ran: it runs in the
    // same turn, so that a client streaming a pipeline is served (and, under `appendfsync
    // always`, group-committed) READ_MAX bytes at a time rather than a ring buffer at a time.
    let mut carried: Option<Option<std::io::Result<compio::driver::BufferRef>>> = None;
    // Bytes run since the replies were last handed over.
    let mut turn_bytes = 0usize;
    // Set when every ring buffer was in use (ENOBUFS, which ends the multishot receive):
    // the next read goes to the connection's own buffer, and the one after re-arms.
    let mut own_read = !use_ring;
    'conn: loop {
        let mut ring = None;
        if !own_read {
            let item = match carried.take() {
                Some(item) => item,
                None => {
                    std::future::poll_fn(|cx| futures_core::Stream::poll_next(multi.as_mut(), cx))
                        .await
                }
            };
            match item {
                Some(Ok(b)) => ring = Some(b),
                // End of stream.
                None => break,
                Some(Err(e))
                    if e.kind() == std::io::ErrorKind::ResourceBusy
                        || e.raw_os_error() == Some(libc::ENOBUFS) =>
                {
                    own_read = true
                }
                Some(Err(_)) => break,
            }
        }
        let n = match ring.take() {
            Some(b) if rbuf.is_empty() => {
                let n = b.len();
                ring = Some(b);
                n
            }
            Some(b) => {
                // The rest of a request that did not arrive whole: it joins the start
                // in `rbuf`, and the ring buffer goes back at once.
                rbuf.extend_from_slice(&b);
                b.len()
            }
            None => {
                own_read = !use_ring;
                if rbuf.capacity() == 0 {
                    rbuf = crate::netbuf::take();
                }
                if rbuf.capacity() - rbuf.len() < read_size / 4 {
                    if start > 0 {
                        rbuf.drain(..start);
                        start = 0;
                    }
                    rbuf.reserve(read_size);
                }
                let len = rbuf.len();
                let asked = rbuf.capacity() - len;
                let BufResult(res, slice) = stream.read(rbuf.slice(len..)).await;
                rbuf = slice.into_inner();
                match res {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if n == asked && read_size < READ_MAX {
                            read_size *= 2;
                        } else if n < READ_MIN / 2 {
                            // The stream ended: back to the ring (the buffer goes back
                            // at the end of the turn once empty).
                            read_size = READ_MIN;
                        }
                        n
                    }
                }
            }
        };
        shard.borrow_mut().stats.net_input_bytes += n as u64;
        if info.killed.get() || outbox.failed.get() {
            break;
        }
        info.last_interaction.set(Instant::now());
        conn.now_ms = unix_ms();
        if conn.reply.buf.capacity() == 0 {
            conn.reply.buf = crate::netbuf::take();
        }
        let hot = &shared.config.hot;
        let mut limits = Limits {
            max_bulk_len: hot.proto_max_bulk_len.load(Ordering::Relaxed),
            ..Limits::default()
        };
        let mut hint = 0usize;
        // Commands before this offset had their keys prefetched (crate::prefetch), and
        // those it parsed are kept in `ahead` so as not to be parsed again.
        let mut prefetched_to = 0usize;
        ahead.clear();
        loop {
            // The bytes read: the ring buffer, or the request in progress and what followed.
            let mut data: &[u8] = match &ring {
                Some(b) => b,
                None => &rbuf,
            };
            limits.unauthenticated =
                !conn.authenticated && hot.auth_required.load(Ordering::Relaxed);
            // A command the look-ahead parsed is not parsed again.
            let mut known = None;
            let parsed = match ahead.take(start, &limits, &mut parser) {
                Some((consumed, idx)) => {
                    known = idx;
                    Ok(Parsed::Complete { consumed })
                }
                None => parser.parse(&data[start..], &limits),
            };
            match parsed {
                Ok(Parsed::Complete { consumed }) => {
                    let mut base = start;
                    start += consumed;
                    if parser.argc() == 0 {
                        continue;
                    }
                    if start >= prefetched_to && start < data.len() {
                        // More commands follow this one: bring the next ones' keys in.
                        prefetched_to = start
                            + crate::prefetch::window(
                                &data[start..],
                                start,
                                conn.db,
                                conn.worker,
                                shared.workers,
                                &limits,
                                &mut ahead,
                            );
                    }
                    if ring.is_some() && may_wait_long(parser.arg(&data[base..], 0)) {
                        // A blocking command may wait for minutes: the ring buffer goes
                        // back first, its bytes from this request on moving to `rbuf`
                        // (what the look-ahead kept no longer points at them).
                        if let Some(b) = ring.take() {
                            rbuf = b[base..].to_vec();
                        }
                        start -= base;
                        base = 0;
                        data = &rbuf;
                        ahead.clear();
                        prefetched_to = 0;
                    }
                    let argv: Argv = parser.args(&data[base..]).collect();
                    // A subscribed client's messages wait until the command has replied
                    // (not while a blocking command, BLPOP, XREAD BLOCK or WAIT, may wait:
                    // they go out as they come).
                    let defer = info.subscribed()
                        && !argv.first().is_some_and(|n| {
                            known
                                .or_else(|| commands::lookup(n))
                                .is_some_and(|i| COMMANDS[i].has_flag("blocking"))
                        });
                    if defer {
                        outbox.start_deferring();
                    }
                    conn.dispatch(&argv, known).await;
                    if defer {
                        outbox.end_deferring(&mut conn.reply.buf);
                    }
                    if info.subscribed() {
                        // Messages go straight to the outbox: replies must be there
                        // before the next one arrives, to keep their order.
                        conn.flush_pending().await;
                        hand_over_replies(conn, outbox).await;
                    }
                    if conn.close_after_reply || info.killed.get() {
                        break;
                    }
                    let pending = conn.reply.buf.len() + outbox.pending();
                    if !within_output_limits(conn, pending, shard) {
                        break 'conn;
                    }
                }
                Ok(Parsed::Incomplete { hint: h }) => {
                    hint = h;
                    break;
                }
                Err(e) => {
                    conn.flush_pending().await;
                    let msg = format!("ERR {e}");
                    conn.reply.error(&msg);
                    shard.borrow_mut().stats.record_error(b"-ERR");
                    tracing::info!(
                        "Protocol error ({e}) from client: id={} addr={}",
                        info.id,
                        info.addr
                    );
                    conn.close_after_reply = true;
                    break;
                }
            }
        }
        if let Some(b) = ring.take() {
            // A request that did not arrive whole moves to a buffer of the connection's own;
            // the ring buffer goes back.
            if start < b.len() {
                rbuf = crate::netbuf::take();
                rbuf.extend_from_slice(&b[start..]);
            }
            start = 0;
        }
        if start == rbuf.len() {
            start = 0;
            rbuf.clear();
            // A streaming client keeps its buffer for the next read.
            if crate::netbuf::ring_enabled() && read_size == READ_MIN {
                crate::netbuf::give(std::mem::take(&mut rbuf));
            }
        } else {
            let unparsed = rbuf.len() - start;
            let qlimit = hot.query_buffer_limit.load(Ordering::Relaxed) as usize;
            if unparsed > qlimit {
                tracing::warn!(
                    "Closing client that reached max query buffer length: id={} addr={} (qbuf initial bytes: {:?})",
                    info.id,
                    info.addr,
                    sanitize(&rbuf[start..], 64)
                );
                shard.borrow_mut().stats.client_query_limit_disconnections += 1;
                break;
            }
            if hint > unparsed {
                if start > 0 {
                    rbuf.drain(..start);
                    start = 0;
                }
                rbuf.reserve(hint - unparsed + 1024);
            }
        }
        info.qbuf.set(rbuf.len() - start);
        turn_bytes += n;
        if !own_read
            && n == crate::netbuf::RING_BUF_LEN
            && turn_bytes < READ_MAX
            && !conn.close_after_reply
            && !info.killed.get()
        {
            // A full ring buffer: the client is streaming, and what the receive took
            // meanwhile runs in this turn (see `carried`). A shorter one emptied the socket.
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            if let std::task::Poll::Ready(item) =
                futures_core::Stream::poll_next(multi.as_mut(), &mut cx)
            {
                carried = Some(item);
                continue;
            }
        }
        turn_bytes = 0;
        // The turn's batches for other workers leave now (at most one per worker is in
        // flight: `Hops::gather`); their replies are gathered with this worker's group
        // commit (hand_over_replies).
        conn.send_pending();
        hand_over_replies(conn, outbox).await;
        crate::netbuf::release_if_empty(&mut conn.reply.buf);
        let pending = outbox.pending();
        info.obuf.set(pending);
        if !within_output_limits(conn, pending, shard) {
            break;
        }
        if conn.close_after_reply || info.killed.get() {
            break;
        }
    }
    // Commands sent or queued for other workers still run (and their writes are acked).
    conn.ack_local_writes().await;
    if !conn.reply.buf.is_empty() && !info.killed.get() {
        outbox.push(&mut conn.reply.buf);
    }
}

/// True for a command that may wait long for its reply (BLPOP and the other blocking
/// list and sorted-set commands, whose names all start with `b`, and WAIT and WAITAOF).
fn may_wait_long(name: &[u8]) -> bool {
    matches!(name.first(), Some(b'b' | b'B' | b'w' | b'W'))
        && commands::lookup(name).is_some_and(|i| COMMANDS[i].has_flag("blocking"))
}

/// Moves the replies written so far to the outbox, once the writes they acknowledge are
/// durable as `appendfsync` asks (see [`Conn::ack_local_writes`]).
async fn hand_over_replies(conn: &mut Conn, outbox: &Outbox) {
    conn.ack_local_writes().await;
    if !conn.reply.buf.is_empty() {
        outbox.push(&mut conn.reply.buf);
    }
}

/// True when `pending` output bytes of client `info` break `client-output-buffer-limit`
/// (`hard`, `soft` bytes, `soft_s` seconds, 0 for none): over the hard limit, or over the
/// soft limit for `soft_s` seconds or longer (tracked in `info.over_soft_since`).
pub(crate) fn over_output_limit(
    info: &ClientInfo,
    pending: usize,
    hard: u64,
    soft: u64,
    soft_s: u64,
    now: impl FnOnce() -> Instant,
) -> bool {
    let pending = pending as u64;
    let mut over = hard > 0 && pending > hard;
    if soft > 0 && pending > soft {
        // The clock is read only here: most calls (every command) are under the limits.
        let now = now();
        let since = info.over_soft_since.get().unwrap_or(now);
        info.over_soft_since.set(Some(since));
        if now.duration_since(since) >= Duration::from_secs(soft_s) {
            over = true;
        }
    } else {
        info.over_soft_since.set(None);
    }
    over
}

/// False (after logging) when `pending` reply bytes break the `client-output-buffer-limit`
/// of the client's class (pubsub while it has subscriptions, else normal).
fn within_output_limits(conn: &Conn, pending: usize, shard: &Rc<RefCell<Shard>>) -> bool {
    let (hard, soft, soft_s) = conn.shared.config.hot.output_limits(conn.info.subscribed());
    let over = over_output_limit(&conn.info, pending, hard, soft, soft_s, Instant::now);
    if over {
        tracing::warn!(
            "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
            conn.info.id,
            conn.info.addr
        );
        shard.borrow_mut().stats.client_output_limit_disconnections += 1;
        conn.info.kill();
    }
    !over
}
