//! What a worker knows about each of its clients, for CLIENT LIST/INFO/KILL, the idle timeout
//! and INFO clients. The connection task updates it; the worker reads it.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::task::Waker;
use std::time::Instant;

/// One connected client.
pub struct ClientInfo {
    /// Unique id (CLIENT ID).
    pub id: u64,
    /// Peer address.
    pub addr: SocketAddr,
    /// Local address.
    pub laddr: SocketAddr,
    /// Socket descriptor (to shut the socket down from outside the connection task).
    pub fd: RawFd,
    /// Worker the client is connected to.
    pub worker: usize,
    /// When the connection was accepted.
    pub created: Instant,
    /// Last command or read.
    pub last_interaction: Cell<Instant>,
    /// CLIENT SETNAME.
    pub name: RefCell<Vec<u8>>,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: RefCell<Vec<u8>>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: RefCell<Vec<u8>>,
    /// Selected database.
    pub db: Cell<usize>,
    /// Protocol version (2 or 3).
    pub resp: Cell<u8>,
    /// Last command name.
    pub last_cmd: Cell<&'static str>,
    /// Unparsed query bytes.
    pub qbuf: Cell<usize>,
    /// Pending reply bytes.
    pub obuf: Cell<usize>,
    /// CLIENT NO-EVICT.
    pub no_evict: Cell<bool>,
    /// CLIENT NO-TOUCH.
    pub no_touch: Cell<bool>,
    /// Set by CLIENT KILL, the idle timeout or SHUTDOWN.
    pub killed: Cell<bool>,
    /// True while the client waits inside a command (not idle).
    pub blocked_in_command: Cell<bool>,
    /// True while the client waits in a blocking command (BLPOP, ...).
    pub in_blocking: Cell<bool>,
    /// CLIENT UNBLOCK asked it to stop waiting: 1 as if timed out, 2 with an error (set it
    /// through [`ClientInfo::unblock_with`], which wakes the waiting connection).
    pub unblock: Cell<u8>,
    /// The connection task waiting in a blocking command, woken by CLIENT KILL and CLIENT
    /// UNBLOCK (see `crate::blocking::wait_for_reply`).
    pub blocked_waker: RefCell<Option<Waker>>,
    /// Commands queued since MULTI; -1 outside MULTI (CLIENT LIST's `multi`).
    pub multi: Cell<i64>,
    /// Authenticated user (empty when not authenticated).
    pub user: RefCell<&'static str>,
    /// Channels subscribed to (SUBSCRIBE), patterns (PSUBSCRIBE) and shard channels
    /// (SSUBSCRIBE): CLIENT LIST's `sub`, `psub` and `ssub`.
    pub subscriptions: Cell<[u32; 3]>,
    /// Since when the output has been over the soft `client-output-buffer-limit`.
    pub over_soft_since: Cell<Option<Instant>>,
}

impl ClientInfo {
    /// True while the client has a subscription of any kind (Redis's `CLIENT_PUBSUB`).
    pub fn subscribed(&self) -> bool {
        self.subscriptions.get().iter().any(|&n| n > 0)
    }

    /// Marks the client for closing and wakes its connection task by shutting the socket down.
    pub fn kill(&self) {
        self.killed.set(true);
        self.wake_blocked();
        // SAFETY: shutdown(2) on a descriptor this client owns; if the descriptor was already
        // closed the call fails harmlessly with EBADF (descriptors are only closed by the
        // connection task after it removes this entry from the registry).
        unsafe {
            libc::shutdown(self.fd, libc::SHUT_RDWR);
        }
    }

    /// CLIENT UNBLOCK: asks the client's blocking command to end now, `how` 1 as if it
    /// timed out, 2 with an error.
    pub fn unblock_with(&self, how: u8) {
        self.unblock.set(how);
        self.wake_blocked();
    }

    fn wake_blocked(&self) {
        if let Some(w) = self.blocked_waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// The CLIENT LIST / CLIENT INFO line for this client.
    pub fn describe(&self, now: Instant) -> String {
        let age = now.duration_since(self.created).as_secs();
        let idle = now.duration_since(self.last_interaction.get()).as_secs();
        let mut flags = String::new();
        let multi = self.multi.get();
        if multi >= 0 {
            flags.push('x');
        }
        if self.in_blocking.get() {
            flags.push('b');
        }
        if self.no_evict.get() {
            flags.push('e');
        }
        if self.no_touch.get() {
            flags.push('T');
        }
        let [sub, psub, ssub] = self.subscriptions.get();
        if sub + psub + ssub > 0 {
            flags.push('P');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={} tot-mem=0 events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            String::from_utf8_lossy(&self.name.borrow()),
            age,
            idle,
            flags,
            self.db.get(),
            sub,
            psub,
            ssub,
            multi,
            self.qbuf.get(),
            self.obuf.get(),
            self.last_cmd.get(),
            self.user.borrow(),
            self.resp.get(),
            String::from_utf8_lossy(&self.lib_name.borrow()),
            String::from_utf8_lossy(&self.lib_ver.borrow()),
        )
    }
}
