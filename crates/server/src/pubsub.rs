//! Pub/sub: who is subscribed to what on one worker, and the delivery of messages to them.
//!
//! Shared-nothing like the keyspace. Each worker's [`Registry`] holds the subscriptions of
//! its own connections and nothing else. A PUBLISH delivers to its own worker's subscribers
//! and sends the message to every other worker whose registry is not empty
//! ([`Active`]), then answers the sum of the receivers once every worker has delivered. So,
//! as in Redis, a message is queued to every subscriber before PUBLISH replies, and one
//! publisher's messages reach a subscriber in the order they were published.
//!
//! A message goes straight into the subscriber's outbox, behind the replies already queued
//! there. A subscribed connection moves each reply to its outbox as soon as the command has
//! run (see `conn::read_loop`), so its replies and its messages leave in the order they were
//! made. While a subscribed connection runs a (non-blocking) command, its messages are held
//! and follow that command's reply, as Redis 8.0 does for a client publishing to itself
//! (`pending_push_messages`: after the whole EXEC or script reply too). The commands live
//! in `commands/pubsub.rs`.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use skerry_resp::{self as resp, Proto};

use crate::client::ClientInfo;
use crate::config::Hot;
use crate::conn::Outbox;
use crate::glob::glob_match;

/// The two channel namespaces: PUBLISH/SUBSCRIBE (with patterns) and the sharded
/// SPUBLISH/SSUBSCRIBE of Redis 7.0 (no patterns).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Space {
    /// PUBLISH, SUBSCRIBE, PSUBSCRIBE.
    Global,
    /// SPUBLISH, SSUBSCRIBE.
    Shard,
}

/// A connection that receives messages: where they go and how they are encoded.
#[derive(Clone)]
pub struct Subscriber {
    /// The client (its protocol, its id, and whether it is being closed).
    pub info: Rc<ClientInfo>,
    /// Its outgoing queue.
    pub out: Rc<Outbox>,
}

/// The subscriptions of one worker's connections.
#[derive(Default)]
pub struct Registry {
    channels: HashMap<Vec<u8>, Vec<Subscriber>>,
    shard_channels: HashMap<Vec<u8>, Vec<Subscriber>>,
    patterns: HashMap<Vec<u8>, Vec<Subscriber>>,
    /// Subscriptions of every kind (what [`Active`] publishes for this worker).
    entries: usize,
}

/// How many subscriptions each worker holds, so that a PUBLISH visits only the workers
/// that may have receivers.
pub struct Active {
    per_worker: Box<[AtomicUsize]>,
}

impl Active {
    /// No subscriptions on any of `workers` workers.
    pub fn new(workers: usize) -> Self {
        Active {
            per_worker: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// True when worker `w` holds at least one subscription.
    pub fn has_subscribers(&self, w: usize) -> bool {
        self.per_worker[w].load(Ordering::SeqCst) > 0
    }

    fn set(&self, w: usize, n: usize) {
        self.per_worker[w].store(n, Ordering::SeqCst);
    }
}

/// What one worker delivered for one PUBLISH.
#[derive(Default, Debug, Clone, Copy)]
pub struct Delivered {
    /// Messages queued (a client subscribed to the channel and to two matching patterns
    /// counts three times, as in Redis).
    pub receivers: usize,
    /// Subscribers closed for going over the pubsub output buffer limit.
    pub disconnected: u64,
}

impl Registry {
    fn table(&mut self, space: Space) -> &mut HashMap<Vec<u8>, Vec<Subscriber>> {
        match space {
            Space::Global => &mut self.channels,
            Space::Shard => &mut self.shard_channels,
        }
    }

    fn table_ref(&self, space: Space) -> &HashMap<Vec<u8>, Vec<Subscriber>> {
        match space {
            Space::Global => &self.channels,
            Space::Shard => &self.shard_channels,
        }
    }

    /// Adds `sub` to `channel` (the caller checked that it was not subscribed yet).
    pub fn subscribe(&mut self, space: Space, channel: &[u8], sub: Subscriber) {
        self.table(space)
            .entry(channel.to_vec())
            .or_default()
            .push(sub);
        self.entries += 1;
    }

    /// Adds `sub` to `pattern` (the caller checked that it was not subscribed yet).
    pub fn psubscribe(&mut self, pattern: &[u8], sub: Subscriber) {
        self.patterns.entry(pattern.to_vec()).or_default().push(sub);
        self.entries += 1;
    }

    /// Removes client `id` from `channel`.
    pub fn unsubscribe(&mut self, space: Space, channel: &[u8], id: u64) {
        let removed = remove(self.table(space), channel, id);
        self.entries -= removed;
    }

    /// Removes client `id` from `pattern`.
    pub fn punsubscribe(&mut self, pattern: &[u8], id: u64) {
        let removed = remove(&mut self.patterns, pattern, id);
        self.entries -= removed;
    }

    /// Subscriptions of every kind on this worker.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Publishes this worker's subscription count for worker `w`.
    pub fn publish_count(&self, active: &Active, w: usize) {
        active.set(w, self.entries);
    }

    /// Queues `message` on `channel` to this worker's subscribers (and, in the global space,
    /// to those of every matching pattern).
    pub fn deliver(&self, space: Space, channel: &[u8], message: &[u8], hot: &Hot) -> Delivered {
        let mut d = Delivered::default();
        let mut encoded = Encoded::default();
        let kind: &[u8] = match space {
            Space::Global => b"message",
            Space::Shard => b"smessage",
        };
        if let Some(subs) = self.table_ref(space).get(channel) {
            for s in subs {
                let bytes = encoded.get(s.proto(), &[kind, channel, message]);
                push_to(s, bytes, hot, &mut d);
            }
        }
        if space == Space::Global && !self.patterns.is_empty() {
            for (pattern, subs) in &self.patterns {
                if !glob_match(pattern, channel, false) {
                    continue;
                }
                // One encoding per pattern: the pattern is part of the message.
                let mut per_pattern = Encoded::default();
                for s in subs {
                    let bytes =
                        per_pattern.get(s.proto(), &[b"pmessage", pattern, channel, message]);
                    push_to(s, bytes, hot, &mut d);
                }
            }
        }
        d
    }

    /// The channels with at least one subscriber on this worker, matching `pattern` if given
    /// (PUBSUB CHANNELS / SHARDCHANNELS).
    pub fn channel_names(&self, space: Space, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.table_ref(space)
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of each of `channels` on this worker (PUBSUB NUMSUB / SHARDNUMSUB).
    pub fn numsub(&self, space: Space, channels: &[Vec<u8>]) -> Vec<usize> {
        let t = self.table_ref(space);
        channels
            .iter()
            .map(|c| t.get(c).map_or(0, Vec::len))
            .collect()
    }

    /// The patterns with at least one subscriber on this worker (PUBSUB NUMPAT, INFO).
    pub fn pattern_names(&self) -> HashSet<Vec<u8>> {
        self.patterns.keys().cloned().collect()
    }
}

impl Subscriber {
    fn proto(&self) -> Proto {
        if self.info.resp.get() >= 3 {
            Proto::Resp3
        } else {
            Proto::Resp2
        }
    }
}

/// Removes client `id` from `name`'s list; returns how many entries went (0 or 1).
fn remove(table: &mut HashMap<Vec<u8>, Vec<Subscriber>>, name: &[u8], id: u64) -> usize {
    let Some(subs) = table.get_mut(name) else {
        return 0;
    };
    let before = subs.len();
    subs.retain(|s| s.info.id != id);
    let removed = before - subs.len();
    if subs.is_empty() {
        table.remove(name);
    }
    removed
}

/// A message encoded once per protocol version.
#[derive(Default)]
struct Encoded {
    resp2: Option<Vec<u8>>,
    resp3: Option<Vec<u8>>,
}

impl Encoded {
    fn get(&mut self, proto: Proto, parts: &[&[u8]]) -> &[u8] {
        let slot = match proto {
            Proto::Resp2 => &mut self.resp2,
            Proto::Resp3 => &mut self.resp3,
        };
        slot.get_or_insert_with(|| encode(proto, parts))
    }
}

/// A pub/sub message or notification: an array in RESP2, a push in RESP3.
pub fn encode(proto: Proto, parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + parts.iter().map(|p| p.len() + 16).sum::<usize>());
    resp::push_len(&mut out, parts.len(), proto);
    for p in parts {
        resp::bulk(&mut out, p);
    }
    out
}

/// Queues `bytes` to `s` unless it is being closed; closes it when its output goes over the
/// pubsub class of `client-output-buffer-limit` (Redis's defaults: 32 MB hard, 8 MB for 60 s).
fn push_to(s: &Subscriber, bytes: &[u8], hot: &Hot, d: &mut Delivered) {
    if s.info.killed.get() || s.out.failed() {
        return;
    }
    s.out.push_bytes(bytes);
    d.receivers += 1;
    let pending = s.out.pending();
    s.info.obuf.set(pending);
    let (hard, soft, soft_s) = hot.output_limits(true);
    if crate::conn::over_output_limit(&s.info, pending, hard, soft, soft_s, Instant::now) {
        tracing::warn!(
            "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
            s.info.id,
            s.info.addr
        );
        d.disconnected += 1;
        s.info.kill();
    }
}

/// One connection's subscriptions (the other side of the [`Registry`]).
#[derive(Default)]
pub struct ClientSubs {
    /// SUBSCRIBE channels.
    pub channels: HashSet<Vec<u8>>,
    /// SSUBSCRIBE channels.
    pub shard_channels: HashSet<Vec<u8>>,
    /// PSUBSCRIBE patterns, in subscription order.
    pub patterns: Vec<Vec<u8>>,
}

impl ClientSubs {
    /// The channel set of `space`.
    pub fn set(&mut self, space: Space) -> &mut HashSet<Vec<u8>> {
        match space {
            Space::Global => &mut self.channels,
            Space::Shard => &mut self.shard_channels,
        }
    }

    /// The count a notification of `space` carries: channels plus patterns for the global
    /// space, shard channels for the shard space (as Redis counts).
    pub fn count(&self, space: Space) -> usize {
        match space {
            Space::Global => self.channels.len() + self.patterns.len(),
            Space::Shard => self.shard_channels.len(),
        }
    }

    /// CLIENT LIST's `sub`, `psub` and `ssub`.
    pub fn counts(&self) -> [u32; 3] {
        [
            self.channels.len() as u32,
            self.patterns.len() as u32,
            self.shard_channels.len() as u32,
        ]
    }
}
