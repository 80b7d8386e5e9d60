//! The 32-byte index entry: the key (inline up to 15 bytes, else on the heap), the packed
//! location of the key's current record on the data devices, and the absolute expiry with
//! the value type. Values never live here: they are on the devices (decision 0004).
//!
//! Layout (`repr(C)`, 32 bytes, 8-byte aligned):
//!
//! | bytes  | field                                                                       |
//! |--------|-----------------------------------------------------------------------------|
//! | 0..16  | key: inline bytes 0..15 with byte 15 = length (0..=15), or a heap key:      |
//! |        | bytes 0..8 = pointer of a leaked `Box<[u8]>`, 8..12 = length, 15 = `HEAP`   |
//! | 16..24 | location: device (4 bits), block (20), offset / 8 (20), length / 8 (20)      |
//! | 24..32 | meta: expiry in Unix ms (bits 0..44, 0 = none), value type (bits 44..48),    |
//! |        | access clock (bits 48..64; see below)                                       |
//!
//! The expiry's 44 bits reach Unix ms 2^44 - 1 (year 2527); a later expiry is clamped to
//! it (the record on the device keeps the exact time; only TTL replies see the clamp). Value
//! types are 0..=5 (4 bits leave room for ten more).
//!
//! The access clock is Redis's `lru` field in 16 bits (`keyspace/clock.rs`, decision 0029):
//! under an LRU (or no-eviction) `maxmemory-policy` the Unix time in seconds modulo 2^16 of
//! the last access; under an LFU policy the Unix time in minutes modulo 2^8 of the last
//! decrement (high 8 bits) and the logarithmic access counter (low 8 bits).
//! The hash of the key is not stored: the table recomputes it (foldhash over at most a few
//! dozen bytes) when a segment splits or a SCAN orders a segment.

use skerry_store::Location;

/// Keys up to this many bytes are stored inside the entry.
pub const INLINE_KEY_MAX_BYTES: usize = 15;

/// Marker in key byte 15 for a heap key.
const HEAP: u8 = 0xFF;

/// Largest device index a packed location holds.
pub const MAX_DEVICES: usize = 16;
/// Largest number of blocks per device a packed location holds.
pub const MAX_BLOCKS_PER_DEVICE: u64 = 1 << 20;
/// Largest block size a packed location holds (offsets and lengths are 8-byte units in 20
/// bits).
pub const MAX_BLOCK_SIZE_BYTES: u64 = 8 << 20;

/// The largest expiry an entry holds (Unix ms, year 2527); later ones are clamped to it.
pub const EXPIRY_MAX_MS: i64 = (1 << 44) - 1;
const EXPIRY_MASK: u64 = (1 << 44) - 1;
const TYPE_SHIFT: u32 = 44;
const TYPE_MASK: u64 = 0xF << TYPE_SHIFT;
const CLOCK_SHIFT: u32 = 48;

/// A record location packed into 64 bits (see the module doc for the limits the store is
/// checked against at startup).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PackedLoc(u64);

impl PackedLoc {
    /// Packs `loc`. Panics (an invariant checked at startup: geometry within the limits
    /// above) when it does not fit.
    #[inline]
    pub fn pack(loc: &Location) -> PackedLoc {
        let (dev, block) = (u64::from(loc.device), u64::from(loc.block));
        let (off, len) = (u64::from(loc.offset_bytes), u64::from(loc.len_bytes));
        assert!(
            dev < MAX_DEVICES as u64
                && block < MAX_BLOCKS_PER_DEVICE
                && off % 8 == 0
                && len % 8 == 0
                && off / 8 < (1 << 20)
                && len / 8 < (1 << 20),
            "location {loc:?} outside the packed range"
        );
        PackedLoc((dev << 60) | (block << 40) | ((off / 8) << 20) | (len / 8))
    }

    /// The location.
    #[inline]
    pub fn unpack(self) -> Location {
        let v = self.0;
        Location {
            device: (v >> 60) as u16,
            block: ((v >> 40) & 0xF_FFFF) as u32,
            offset_bytes: (((v >> 20) & 0xF_FFFF) * 8) as u32,
            len_bytes: ((v & 0xF_FFFF) * 8) as u32,
        }
    }

    /// The raw bits (a map key).
    #[inline]
    pub fn bits(self) -> u64 {
        self.0
    }

    /// A packed location from its raw bits ([`PackedLoc::bits`]; index checkpoints store
    /// them).
    #[inline]
    pub fn from_bits(bits: u64) -> PackedLoc {
        PackedLoc(bits)
    }
}

/// One key of the index.
#[repr(C)]
pub struct Entry {
    key: [u8; 16],
    loc: PackedLoc,
    meta: u64,
}

// SAFETY: the only pointer inside an entry is to a heap key the entry owns exclusively
// (a leaked `Box<[u8]>` freed in `Drop`); moving the entry to another thread moves that
// ownership with it, as for a `Box`.
unsafe impl Send for Entry {}

impl Entry {
    /// A new entry for `key` whose current record is at `loc`.
    pub fn new(key: &[u8], loc: PackedLoc, value_type: u8, expire_at_ms: i64) -> Entry {
        let mut k = [0u8; 16];
        if key.len() <= INLINE_KEY_MAX_BYTES {
            k[..key.len()].copy_from_slice(key);
            k[15] = key.len() as u8;
        } else {
            let len = u32::try_from(key.len()).expect("keys are limited to 512 MiB");
            let boxed: Box<[u8]> = key.into();
            let ptr = Box::into_raw(boxed) as *mut u8 as usize as u64;
            k[..8].copy_from_slice(&ptr.to_le_bytes());
            k[8..12].copy_from_slice(&len.to_le_bytes());
            k[15] = HEAP;
        }
        let mut e = Entry {
            key: k,
            loc,
            meta: 0,
        };
        e.set_value_type(value_type);
        e.set_expire_at_ms(expire_at_ms);
        e
    }

    /// An entry that owns nothing (an unused table slot): an empty inline key.
    pub const fn vacant() -> Entry {
        Entry {
            key: [0; 16],
            loc: PackedLoc(0),
            meta: 0,
        }
    }

    #[inline]
    fn is_heap(&self) -> bool {
        self.key[15] == HEAP
    }

    /// The key when it lives outside the entry (longer than [`INLINE_KEY_MAX_BYTES`]).
    #[inline]
    pub fn heap_key(&self) -> Option<&[u8]> {
        self.is_heap().then(|| self.key())
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        if self.is_heap() {
            let ptr = u64::from_le_bytes(self.key[..8].try_into().expect("8 bytes")) as usize;
            let len = u32::from_le_bytes(self.key[8..12].try_into().expect("4 bytes")) as usize;
            // SAFETY: a heap entry's bytes 0..12 hold the pointer and length of the boxed
            // slice leaked in `Entry::new`; it stays allocated and unchanged until `Drop`,
            // and the returned borrow cannot outlive `self`.
            unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
        } else {
            &self.key[..usize::from(self.key[15])]
        }
    }

    /// Where the key's current record is.
    #[inline]
    pub fn loc(&self) -> PackedLoc {
        self.loc
    }

    /// Points the entry at a new record.
    #[inline]
    pub fn set_loc(&mut self, loc: PackedLoc) {
        self.loc = loc;
    }

    /// Absolute expiry in Unix ms; 0 = none.
    #[inline]
    pub fn expire_at_ms(&self) -> i64 {
        (self.meta & EXPIRY_MASK) as i64
    }

    /// Sets the absolute expiry (0 = none; clamped to [`EXPIRY_MAX_MS`], year 2527).
    #[inline]
    pub fn set_expire_at_ms(&mut self, at_ms: i64) {
        let at = (at_ms.max(0) as u64).min(EXPIRY_MASK);
        self.meta = (self.meta & !EXPIRY_MASK) | at;
    }

    /// The value type (the store's `VALUE_TYPE_*`).
    #[inline]
    pub fn value_type(&self) -> u8 {
        ((self.meta & TYPE_MASK) >> TYPE_SHIFT) as u8
    }

    /// Sets the value type (0..=15).
    #[inline]
    pub fn set_value_type(&mut self, t: u8) {
        debug_assert!(t < 16, "value type {t} does not fit the entry");
        self.meta = (self.meta & !TYPE_MASK) | ((u64::from(t) << TYPE_SHIFT) & TYPE_MASK);
    }

    /// The access clock (Redis's `lru` field in 16 bits; `keyspace/clock.rs`).
    #[inline]
    pub fn clock(&self) -> u16 {
        (self.meta >> CLOCK_SHIFT) as u16
    }

    /// Sets the access clock.
    #[inline]
    pub fn set_clock(&mut self, clock: u16) {
        self.meta = (self.meta & !(0xFFFF << CLOCK_SHIFT)) | (u64::from(clock) << CLOCK_SHIFT);
    }

    /// True when the key has an expiry that is due at `now_ms`.
    #[inline]
    pub fn expired(&self, now_ms: i64) -> bool {
        let at = self.expire_at_ms();
        at != 0 && at <= now_ms
    }

    /// Heap bytes owned by the entry (a long key).
    pub fn heap_bytes(&self) -> usize {
        if self.is_heap() {
            self.key().len()
        } else {
            0
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if self.is_heap() {
            let ptr = u64::from_le_bytes(self.key[..8].try_into().expect("8 bytes")) as usize;
            let len = u32::from_le_bytes(self.key[8..12].try_into().expect("4 bytes")) as usize;
            // SAFETY: pointer and length are those of the `Box<[u8]>` leaked in
            // `Entry::new`, owned by this entry alone and freed exactly once, here.
            unsafe {
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    ptr as *mut u8,
                    len,
                )));
            }
        }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("key", &String::from_utf8_lossy(self.key()))
            .field("loc", &self.loc.unpack())
            .field("expire_at_ms", &self.expire_at_ms())
            .field("value_type", &self.value_type())
            .field("clock", &self.clock())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(device: u16, block: u32, offset_bytes: u32, len_bytes: u32) -> Location {
        Location {
            device,
            block,
            offset_bytes,
            len_bytes,
        }
    }

    #[test]
    fn entry_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn expiry_is_clamped_to_44_bits_without_touching_type_or_clock() {
        let mut e = Entry::new(b"k", PackedLoc::from_bits(0), 15, i64::MAX);
        e.set_clock(0xFFFF);
        assert_eq!(e.expire_at_ms(), EXPIRY_MAX_MS);
        e.set_expire_at_ms(EXPIRY_MAX_MS + 1);
        assert_eq!(e.expire_at_ms(), EXPIRY_MAX_MS);
        assert_eq!((e.value_type(), e.clock()), (15, 0xFFFF));
        e.set_expire_at_ms(-5);
        assert_eq!(e.expire_at_ms(), 0, "a negative expiry is none");
        // Year 2500 fits exactly.
        let y2500 = 16_725_225_600_000;
        e.set_expire_at_ms(y2500);
        assert_eq!(e.expire_at_ms(), y2500);
        assert_eq!((e.value_type(), e.clock()), (15, 0xFFFF));
    }

    #[test]
    fn locations_round_trip_at_the_limits() {
        for l in [
            loc(0, 0, 4096, 40),
            loc(15, (1 << 20) - 1, (8 << 20) - 8, (8 << 20) - 8),
            loc(3, 12345, 8 * 777, 8 * 999),
        ] {
            assert_eq!(PackedLoc::pack(&l).unpack(), l);
        }
    }

    #[test]
    #[should_panic(expected = "outside the packed range")]
    fn too_many_devices_is_refused() {
        PackedLoc::pack(&loc(16, 0, 0, 8));
    }

    #[test]
    fn inline_and_heap_keys() {
        let l = PackedLoc::pack(&loc(1, 2, 8, 16));
        for key in [
            &b""[..],
            b"a",
            b"exactly15bytes!",
            b"sixteen-bytes-ky",
            &[7u8; 1000][..],
        ] {
            let mut e = Entry::new(key, l, 3, 1_700_000_000_000);
            assert_eq!(e.key(), key);
            assert_eq!(e.loc(), l);
            assert_eq!(e.value_type(), 3);
            assert_eq!(e.expire_at_ms(), 1_700_000_000_000);
            e.set_expire_at_ms(0);
            assert_eq!(e.expire_at_ms(), 0);
            assert_eq!(e.value_type(), 3, "type kept when the expiry changes");
            assert!(!e.expired(i64::MAX));
            e.set_expire_at_ms(5);
            assert!(e.expired(5) && !e.expired(4));
            assert_eq!(e.heap_bytes() > 0, key.len() > INLINE_KEY_MAX_BYTES);
            e.set_clock(0xBEEF);
            e.set_value_type(5);
            e.set_expire_at_ms(1_700_000_000_123);
            assert_eq!(
                (e.clock(), e.value_type(), e.expire_at_ms()),
                (0xBEEF, 5, 1_700_000_000_123),
                "the three meta fields are independent"
            );
            e.set_clock(0);
            assert_eq!((e.value_type(), e.expire_at_ms()), (5, 1_700_000_000_123));
            e.set_clock(0xFFFF);
            e.set_value_type(0);
            e.set_expire_at_ms(0);
            assert_eq!(
                (e.clock(), e.value_type(), e.expire_at_ms()),
                (0xFFFF, 0, 0)
            );
            e.set_value_type(3);
            e.set_expire_at_ms(5);
            // What a batch lookup prefetches: the key's bytes exactly when they are not in
            // the entry.
            match e.heap_key() {
                Some(k) => {
                    assert!(key.len() > INLINE_KEY_MAX_BYTES);
                    assert_eq!(k, key);
                }
                None => assert!(key.len() <= INLINE_KEY_MAX_BYTES),
            }
        }
    }
}
