//! The process's memory budget: how much RAM the value cache may take.
//!
//! `value-cache-mb auto` (the default) sizes the value cache from the memory the process
//! may use, in this order: `maxmemory` when set, else the cgroup's limit where there is
//! one (`memory.max`, or v1's `memory.limit_in_bytes`), else the machine's RAM. From that
//! limit it subtracts what the process holds besides the cache (its RSS less the bytes
//! the caches hold: the index, buffers, connections) and a margin (1/16 of the limit, at
//! least 64 MiB). Without `maxmemory` or a cgroup limit it also leaves the machine's other
//! processes their memory: the budget is at most what the cache holds plus the machine's
//! available memory (`MemAvailable`) less the margin. [`update`] recomputes it every
//! second (the index grows, connections come and go) and the workers resize their caches
//! to their share.
//!
//! `maxmemory`, when set, bounds the whole process: the cache gives way first (with a
//! fixed `value-cache-mb` too), and once the rest of the process alone exceeds it, commands
//! that may add data are refused with Redis's OOM error ([`over_maxmemory`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crate::config::Config;

/// Most workers whose cache sizes are tracked (the `threads` limit).
const MAX_WORKERS: usize = 1024;

/// Bytes each worker's value cache holds, published by the worker's cron.
static CACHE_USED: [AtomicU64; MAX_WORKERS] = [const { AtomicU64::new(0) }; MAX_WORKERS];

static BUDGET_BYTES: AtomicU64 = AtomicU64::new(0);
static LIMIT_BYTES: AtomicU64 = AtomicU64::new(0);
static NON_CACHE_BYTES: AtomicU64 = AtomicU64::new(0);
static SOURCE: AtomicU8 = AtomicU8::new(0);
static OVER_MAXMEMORY: AtomicBool = AtomicBool::new(false);

/// Where the memory limit comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `maxmemory`.
    Maxmemory = 1,
    /// The cgroup's memory limit.
    Cgroup = 2,
    /// The machine's RAM (`MemTotal`).
    Machine = 3,
}

impl Source {
    fn from_u8(v: u8) -> Option<Source> {
        match v {
            1 => Some(Source::Maxmemory),
            2 => Some(Source::Cgroup),
            3 => Some(Source::Machine),
            _ => None,
        }
    }

    /// The name INFO prints.
    pub fn name(self) -> &'static str {
        match self {
            Source::Maxmemory => "maxmemory",
            Source::Cgroup => "cgroup",
            Source::Machine => "machine",
        }
    }
}

/// The budget as last computed (INFO, `/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// Bytes all value caches together may hold (auto), or the `maxmemory` bound on a
    /// fixed `value-cache-mb`.
    pub cache_bytes: u64,
    /// The memory limit it was derived from.
    pub limit_bytes: u64,
    /// What the process held besides the caches (RSS less the caches' bytes).
    pub non_cache_bytes: u64,
    /// Where the limit came from (`None` before the first computation).
    pub source: Option<Source>,
}

/// The budget as last computed.
pub fn budget() -> Budget {
    Budget {
        cache_bytes: BUDGET_BYTES.load(Ordering::Relaxed),
        limit_bytes: LIMIT_BYTES.load(Ordering::Relaxed),
        non_cache_bytes: NON_CACHE_BYTES.load(Ordering::Relaxed),
        source: Source::from_u8(SOURCE.load(Ordering::Relaxed)),
    }
}

/// True when `maxmemory` is set and the process exceeds it even with empty caches:
/// commands that may add data are refused (`-OOM`), as Redis refuses them.
pub fn over_maxmemory() -> bool {
    OVER_MAXMEMORY.load(Ordering::Relaxed)
}

/// Redis's error for a write refused over `maxmemory`.
pub const OOM_ERROR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Worker `id`'s cache now holds `bytes`.
pub fn publish_cache_used(id: usize, bytes: u64) {
    if let Some(slot) = CACHE_USED.get(id) {
        slot.store(bytes, Ordering::Relaxed);
    }
}

/// True when `value-cache-mb` is `auto`.
pub fn cache_is_auto(config: &Config) -> bool {
    config.get("value-cache-mb") == "auto"
}

/// One worker's share of the value cache: of the budget when `value-cache-mb` is `auto`,
/// else of the fixed size (bounded by the budget when `maxmemory` is set).
pub fn per_worker_cache_bytes(config: &Config, workers: usize) -> usize {
    let b = budget();
    let total = if cache_is_auto(config) {
        b.cache_bytes
    } else {
        let fixed = u64::try_from(config.get_i64("value-cache-mb"))
            .unwrap_or(0)
            .saturating_mul(1 << 20);
        if b.source == Some(Source::Maxmemory) {
            fixed.min(b.cache_bytes)
        } else {
            fixed
        }
    };
    usize::try_from(total / workers.max(1) as u64).unwrap_or(usize::MAX)
}

/// The memory the process may use: `maxmemory` when set, else its cgroup's limit, else the
/// machine's RAM (as [`update`] derives it).
pub fn limit_bytes(config: &Config) -> u64 {
    limit_with_source(config).0
}

/// [`limit_bytes`], where it came from, and `/proc/meminfo` when that was read (the
/// machine's RAM only matters without `maxmemory` and a cgroup limit).
fn limit_with_source(config: &Config) -> (u64, Source, String) {
    let maxmemory = u64::try_from(config.get_i64("maxmemory")).unwrap_or(0);
    if maxmemory > 0 {
        return (maxmemory, Source::Maxmemory, String::new());
    }
    if let Some(l) = cgroup_limit_bytes() {
        return (l, Source::Cgroup, String::new());
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let total = meminfo_field(&meminfo, "MemTotal:").unwrap_or(1 << 30);
    (total, Source::Machine, meminfo)
}

/// Recomputes the budget from the limit, the process's RSS and what the caches hold
/// (`workers` of them). Cheap: reads a few small `/proc` and cgroup files.
pub fn update(config: &Config, workers: usize) {
    let cache_used: u64 = CACHE_USED[..workers.min(MAX_WORKERS)]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    let rss = crate::commands::server::rss_bytes();
    let (limit, source, meminfo) = limit_with_source(config);
    let non_cache = rss.saturating_sub(cache_used);
    let margin = (limit / 16).max(64 << 20);
    let mut cache = limit.saturating_sub(non_cache).saturating_sub(margin);
    if let Some(avail) = meminfo_field(&meminfo, "MemAvailable:") {
        cache = cache.min((avail + cache_used).saturating_sub(margin));
    }
    // Small moves are not worth resizing the caches for.
    let old = BUDGET_BYTES.load(Ordering::Relaxed);
    if old == 0 || cache.abs_diff(old) > old / 32 || cache < old && cache_used > cache {
        BUDGET_BYTES.store(cache, Ordering::Relaxed);
    }
    LIMIT_BYTES.store(limit, Ordering::Relaxed);
    NON_CACHE_BYTES.store(non_cache, Ordering::Relaxed);
    SOURCE.store(source as u8, Ordering::Relaxed);
    OVER_MAXMEMORY.store(
        source == Source::Maxmemory && non_cache > limit,
        Ordering::Relaxed,
    );
}

/// A `/proc/meminfo` field, in bytes.
fn meminfo_field(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The memory limit of the cgroup this process is in (the smallest along its path), if
/// it has one.
fn cgroup_limit_bytes() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_limit_from(&membership, |p| std::fs::read_to_string(p).ok())
}

/// [`cgroup_limit_bytes`] over a `/proc/self/cgroup` text and a file reader (tested).
fn cgroup_limit_from(membership: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let parse = |text: Option<String>| -> Option<u64> {
        let t = text?;
        let t = t.trim();
        // "max" (v2) or a huge number (v1's "no limit") means none.
        t.parse::<u64>().ok().filter(|&n| n < 1 << 60)
    };
    let mut best: Option<u64> = None;
    for line in membership.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (root, file) = if controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        // The limit of every cgroup from this one up to the root applies.
        let mut dir = path.trim_end_matches('/').to_string();
        loop {
            if let Some(n) = parse(read(&format!("{root}{dir}/{file}"))) {
                best = Some(best.map_or(n, |b| b.min(n)));
            }
            match dir.rfind('/') {
                Some(i) => dir.truncate(i),
                None => break,
            }
            if dir.is_empty() {
                break;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_are_read_in_bytes() {
        let m = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(meminfo_field(m, "MemTotal:"), Some(24_576_000 * 1024));
        assert_eq!(meminfo_field(m, "MemAvailable:"), Some(2048 * 1024));
        assert_eq!(meminfo_field(m, "SwapTotal:"), None);
    }

    #[test]
    fn cgroup_v2_limit_is_the_smallest_on_the_path() {
        let files = |p: &str| -> Option<String> {
            match p {
                "/sys/fs/cgroup/a/b/memory.max" => Some("max\n".into()),
                "/sys/fs/cgroup/a/memory.max" => Some("2147483648\n".into()),
                _ => None,
            }
        };
        assert_eq!(cgroup_limit_from("0::/a/b\n", files), Some(2 << 30));
        assert_eq!(cgroup_limit_from("0::/other\n", files), None);
        assert_eq!(cgroup_limit_from("0::/\n", files), None);
    }

    #[test]
    fn cgroup_v1_memory_controller_is_used_and_no_limit_ignored() {
        let files = |p: &str| -> Option<String> {
            match p {
                "/sys/fs/cgroup/memory/app/memory.limit_in_bytes" => Some("536870912".into()),
                "/sys/fs/cgroup/memory/memory.limit_in_bytes" => Some("9223372036854771712".into()),
                _ => None,
            }
        };
        let membership = "4:cpu,cpuacct:/app\n3:memory:/app\n";
        assert_eq!(cgroup_limit_from(membership, files), Some(512 << 20));
    }
}
