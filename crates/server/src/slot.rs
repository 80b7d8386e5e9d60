//! Key slots and worker ownership: `CRC16(key) mod 16384` with Redis Cluster hash tags, and
//! `slot mod workers` for the worker that owns a slot.

/// Number of hash slots, as in Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The hash slot of `key`. When the key holds a non-empty `{tag}`, only the tag is hashed,
/// so related keys share a slot (and so a worker).
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match memchr::memchr(b'{', key) {
        Some(open) => match memchr::memchr(b'}', &key[open + 1..]) {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    SLOT_CRC.checksum(hashed) & (SLOTS - 1)
}

/// Redis Cluster's CRC16 (XMODEM), computed sixteen bytes per step: with several workers
/// every keyed command computes its owner with it, and a byte at a time (a chain of
/// dependent table loads) took about 3% of a forwarded SET's CPU (decision 0022).
static SLOT_CRC: crc::Crc<u16, crc::Table<16>> =
    crc::Crc::<u16, crc::Table<16>>::new(&crc::CRC_16_XMODEM);

/// The worker that owns `key` among `workers` workers.
#[inline]
pub fn owner(key: &[u8], workers: usize) -> usize {
    if workers == 1 {
        0
    } else {
        key_slot(key) as usize % workers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_redis_cluster_slots() {
        // Known-good values: Redis 7.0.15's `CLUSTER KEYSLOT` (redis-server --cluster-enabled
        // yes) answered these on 2026-12-06.
        for (key, slot) in [
            (&b"foo"[..], 12182),
            (b"bar", 5061),
            (b"123456789", 12739),
            (b"{user1000}.following", 3443),
            (b"user1000", 3443),
            // An empty first tag hashes the whole key.
            (b"foo{}{bar}", 8363),
            (b"{}foo", 9500),
            // The tag is between the first `{` and the first `}` after it.
            (b"foo{{bar}}zap", 4015),
            (b"{bar", 4015),
        ] {
            assert_eq!(key_slot(key), slot, "{}", String::from_utf8_lossy(key));
        }
    }
}
