//! Pub/sub commands (Redis's `pubsub.c`): SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH, SPUBLISH and the PUBSUB container.
//!
//! Subscriptions live on the subscriber's worker (`crate::pubsub`); PUBLISH visits every
//! worker that holds any.

use std::collections::HashSet;

use skerry_resp as resp;

use crate::conn::Conn;
use crate::pubsub::Space;
use crate::worker::local_shard;

/// Writes one subscribe/unsubscribe notification: `[kind, name or nil, count]`.
fn notify(c: &mut Conn, kind: &[u8], name: Option<&[u8]>, count: usize) {
    let proto = c.reply.proto;
    let out = &mut c.reply.buf;
    resp::push_len(out, 3, proto);
    resp::bulk(out, kind);
    match name {
        Some(n) => resp::bulk(out, n),
        None => resp::null(out, proto),
    }
    resp::integer(out, count as i64);
    c.pushing = true;
}

/// After a change of `c`'s subscriptions: CLIENT LIST's counts and the worker's total for
/// PUBLISH.
fn subscriptions_changed(c: &mut Conn) {
    c.info.subscriptions.set(c.subs.counts());
    let shard = local_shard();
    let s = shard.borrow();
    s.pubsub.publish_count(&c.shared.pubsub_active, c.worker);
}

/// Refuses a subscription inside EXEC where Redis's CLIENT_DENY_BLOCKING does; true if it
/// refused. SUBSCRIBE and PSUBSCRIBE are allowed in MULTI (Redis keeps that for old
/// clients), SSUBSCRIBE is not.
fn deny_in_exec(c: &mut Conn, name: &str, allowed_in_multi: bool) -> bool {
    if c.in_exec && !allowed_in_multi {
        c.reply.error(&format!(
            "ERR {name} isn't allowed for a DENY BLOCKING client"
        ));
        return true;
    }
    false
}

fn subscribe_in(c: &mut Conn, a: &[&[u8]], space: Space) {
    let kind: &[u8] = match space {
        Space::Global => b"subscribe",
        Space::Shard => b"ssubscribe",
    };
    let sub = c.subscriber();
    for ch in &a[1..] {
        if c.subs.set(space).insert(ch.to_vec()) {
            let shard = local_shard();
            shard.borrow_mut().pubsub.subscribe(space, ch, sub.clone());
        }
        let n = c.subs.count(space);
        notify(c, kind, Some(ch), n);
    }
    subscriptions_changed(c);
}

fn unsubscribe_in(c: &mut Conn, a: &[&[u8]], space: Space) {
    let kind: &[u8] = match space {
        Space::Global => b"unsubscribe",
        Space::Shard => b"sunsubscribe",
    };
    let names: Vec<Vec<u8>> = if a.len() == 1 {
        c.subs.set(space).iter().cloned().collect()
    } else {
        a[1..].iter().map(|x| x.to_vec()).collect()
    };
    if names.is_empty() {
        let n = c.subs.count(space);
        notify(c, kind, None, n);
    }
    let id = c.info.id;
    for ch in &names {
        if c.subs.set(space).remove(ch) {
            let shard = local_shard();
            shard.borrow_mut().pubsub.unsubscribe(space, ch, id);
        }
        let n = c.subs.count(space);
        notify(c, kind, Some(ch), n);
    }
    subscriptions_changed(c);
}

/// SUBSCRIBE channel [channel ...]
pub fn subscribe(c: &mut Conn, a: &[&[u8]]) {
    if !deny_in_exec(c, "SUBSCRIBE", true) {
        subscribe_in(c, a, Space::Global);
    }
}

/// SSUBSCRIBE shardchannel [shardchannel ...]
pub fn ssubscribe(c: &mut Conn, a: &[&[u8]]) {
    if !deny_in_exec(c, "SSUBSCRIBE", false) {
        subscribe_in(c, a, Space::Shard);
    }
}

/// UNSUBSCRIBE [channel ...]
pub fn unsubscribe(c: &mut Conn, a: &[&[u8]]) {
    unsubscribe_in(c, a, Space::Global);
}

/// SUNSUBSCRIBE [shardchannel ...]
pub fn sunsubscribe(c: &mut Conn, a: &[&[u8]]) {
    unsubscribe_in(c, a, Space::Shard);
}

/// PSUBSCRIBE pattern [pattern ...]
pub fn psubscribe(c: &mut Conn, a: &[&[u8]]) {
    if deny_in_exec(c, "PSUBSCRIBE", true) {
        return;
    }
    let sub = c.subscriber();
    for p in &a[1..] {
        if !c.subs.patterns.iter().any(|x| x == p) {
            c.subs.patterns.push(p.to_vec());
            let shard = local_shard();
            shard.borrow_mut().pubsub.psubscribe(p, sub.clone());
        }
        let n = c.subs.count(Space::Global);
        notify(c, b"psubscribe", Some(p), n);
    }
    subscriptions_changed(c);
}

/// PUNSUBSCRIBE [pattern ...]
pub fn punsubscribe(c: &mut Conn, a: &[&[u8]]) {
    let names: Vec<Vec<u8>> = if a.len() == 1 {
        c.subs.patterns.clone()
    } else {
        a[1..].iter().map(|x| x.to_vec()).collect()
    };
    if names.is_empty() {
        let n = c.subs.count(Space::Global);
        notify(c, b"punsubscribe", None, n);
    }
    let id = c.info.id;
    for p in &names {
        if let Some(i) = c.subs.patterns.iter().position(|x| x == p) {
            c.subs.patterns.remove(i);
            let shard = local_shard();
            shard.borrow_mut().pubsub.punsubscribe(p, id);
        }
        let n = c.subs.count(Space::Global);
        notify(c, b"punsubscribe", Some(p), n);
    }
    subscriptions_changed(c);
}

/// Drops every subscription of `c` without notifications (connection closed, RESET).
pub fn drop_all(c: &mut Conn) {
    if !c.info.subscribed() {
        return;
    }
    let id = c.info.id;
    let subs = std::mem::take(&mut c.subs);
    {
        let shard = local_shard();
        let mut s = shard.borrow_mut();
        for ch in &subs.channels {
            s.pubsub.unsubscribe(Space::Global, ch, id);
        }
        for ch in &subs.shard_channels {
            s.pubsub.unsubscribe(Space::Shard, ch, id);
        }
        for p in &subs.patterns {
            s.pubsub.punsubscribe(p, id);
        }
    }
    subscriptions_changed(c);
}

/// PUBLISH channel message / SPUBLISH shardchannel message: queues the message to every
/// subscriber on every worker, then answers how many received it.
pub async fn publish(c: &mut Conn, a: &[&[u8]], space: Space) {
    let workers: Vec<usize> = (0..c.shared.workers)
        .filter(|&w| c.shared.pubsub_active.has_subscribers(w))
        .collect();
    if workers.is_empty() {
        c.reply.int(0);
        return;
    }
    let channel = a[1].to_vec();
    let message = a[2].to_vec();
    let parts = std::sync::Arc::new((channel, message));
    let got =
        crate::worker::run_on_workers_in(&c.shared, c.worker, &workers, c.ambient_txn, move |s| {
            let d = s
                .pubsub
                .deliver(space, &parts.0, &parts.1, &s.shared.config.hot);
            s.stats.client_output_limit_disconnections += d.disconnected;
            d.receivers
        })
        .await;
    c.reply.int(got.iter().sum::<usize>() as i64);
}

const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Print this help.",
];

/// The unique channels of `space` (matching `pattern`) over every worker.
async fn all_channels(c: &Conn, space: Space, pattern: Option<Vec<u8>>) -> HashSet<Vec<u8>> {
    let per_worker = c
        .on_all(move |s| s.pubsub.channel_names(space, pattern.as_deref()))
        .await;
    per_worker.into_iter().flatten().collect()
}

/// The unique patterns subscribed to over every worker (PUBSUB NUMPAT).
async fn all_patterns(c: &Conn) -> HashSet<Vec<u8>> {
    let per_worker = c.on_all(|s| s.pubsub.pattern_names()).await;
    per_worker.into_iter().flatten().collect()
}

/// PUBSUB CHANNELS|NUMSUB|NUMPAT|SHARDCHANNELS|SHARDNUMSUB|HELP
pub async fn pubsub(c: &mut Conn, a: &[&[u8]]) {
    let sub = a[1].to_ascii_lowercase();
    match (sub.as_slice(), a.len()) {
        (b"help", 2) => c.reply.simple_lines(PUBSUB_HELP),
        (b"channels" | b"shardchannels", 2 | 3) => {
            let space = if sub == b"channels" {
                Space::Global
            } else {
                Space::Shard
            };
            let names = all_channels(c, space, a.get(2).map(|p| p.to_vec())).await;
            c.reply.array(names.len());
            for n in &names {
                c.reply.bulk(n);
            }
        }
        (b"numsub" | b"shardnumsub", _) => {
            let space = if sub == b"numsub" {
                Space::Global
            } else {
                Space::Shard
            };
            let channels: Vec<Vec<u8>> = a[2..].iter().map(|x| x.to_vec()).collect();
            let asked = channels.clone();
            let per_worker = c.on_all(move |s| s.pubsub.numsub(space, &asked)).await;
            c.reply.array(channels.len() * 2);
            for (i, ch) in channels.iter().enumerate() {
                c.reply.bulk(ch);
                c.reply
                    .int(per_worker.iter().map(|w| w[i]).sum::<usize>() as i64);
            }
        }
        (b"numpat", 2) => {
            let n = all_patterns(c).await.len();
            c.reply.int(n as i64);
        }
        _ => super::subcommand_syntax_error(&mut c.reply, "PUBSUB", a[1]),
    }
}
