//! The per-key access clock: Redis's `lru` object field (`evict.c`, `object.c`) in the 16
//! bits an index entry has for it ([`super::entry::Entry::clock`]; decision 0029).
//!
//! Two readings, chosen by `maxmemory-policy` as in Redis, which converts nothing when the
//! policy changes (the bits are reinterpreted, and adjust as keys are accessed):
//!
//! - **LRU** (every policy but `*-lfu`): the Unix time in seconds of the last access,
//!   modulo 2^16. Idle times are exact to the second up to 65,535 s (18 h 12 min); as in
//!   Redis (whose 24 bits wrap after 194 days) a clock ahead of now is taken to have wrapped
//!   once, so a key idle longer than that reports its idle time modulo 2^16 s.
//! - **LFU** (`allkeys-lfu`, `volatile-lfu`): the Unix time in minutes of the last
//!   decrement modulo 2^8 (high 8 bits; Redis keeps 16) and Redis's logarithmic access
//!   counter (low 8 bits, exactly Redis's: `LFULogIncr` with `lfu-log-factor`, decayed by
//!   one per `lfu-decay-time` minutes, new keys at [`LFU_INIT_VAL`]). Elapsed minutes are
//!   taken modulo 256: a key untouched for longer decays less than Redis's would (for a
//!   decay time of 1 minute nothing is lost: 255 periods take any counter to 0).
//!
//! Every time here comes from the command's cached time (`now_ms`), never a clock read.

/// The counter a new key starts with under an LFU policy (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u8 = 5;

/// Seconds an LRU clock holds before it wraps.
pub const LRU_WRAP_SECONDS: u64 = 1 << 16;

/// How the access clock is read and updated: from `maxmemory-policy`, `lfu-log-factor`
/// and `lfu-decay-time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockMode {
    /// An LFU policy is selected.
    pub lfu: bool,
    /// `lfu-log-factor`.
    pub log_factor: u32,
    /// `lfu-decay-time`, in minutes (0: counters never decay).
    pub decay_minutes: u32,
}

impl Default for ClockMode {
    fn default() -> Self {
        ClockMode {
            lfu: false,
            log_factor: 10,
            decay_minutes: 1,
        }
    }
}

impl ClockMode {
    /// Packs the mode into one word (for a config atomic).
    pub fn to_bits(self) -> u64 {
        (u64::from(self.lfu) << 63)
            | (u64::from(self.decay_minutes & 0x7FFF_FFFF) << 32)
            | u64::from(self.log_factor)
    }

    /// The mode [`ClockMode::to_bits`] packed.
    pub fn from_bits(bits: u64) -> ClockMode {
        ClockMode {
            lfu: bits >> 63 != 0,
            log_factor: bits as u32,
            decay_minutes: ((bits >> 32) & 0x7FFF_FFFF) as u32,
        }
    }

    /// The clock of a key created (or restored without IDLETIME/FREQ) at `now_ms`: the
    /// current second, or the current minute with [`LFU_INIT_VAL`].
    #[inline]
    pub fn new_clock(self, now_ms: i64) -> u16 {
        if self.lfu {
            lfu_pack(minutes(now_ms), LFU_INIT_VAL)
        } else {
            seconds(now_ms)
        }
    }

    /// The clock after an access at `now_ms` (Redis's `updateLFU` or `LRU_CLOCK()`);
    /// `random` is called (for a number in [0, 1)) only under LFU.
    #[inline]
    pub fn touched(self, clock: u16, now_ms: i64, random: impl FnOnce() -> f64) -> u16 {
        if !self.lfu {
            return seconds(now_ms);
        }
        let counter = self.decayed(clock, now_ms);
        lfu_pack(
            minutes(now_ms),
            log_incr(counter, self.log_factor, random()),
        )
    }

    /// The LFU counter decayed to `now_ms` (Redis's `LFUDecrAndReturn`; what OBJECT FREQ
    /// answers), without changing the clock.
    pub fn decayed(self, clock: u16, now_ms: i64) -> u8 {
        let (ldt, counter) = ((clock >> 8) as u8, clock as u8);
        if self.decay_minutes == 0 {
            return counter;
        }
        let elapsed = u32::from(minutes(now_ms).wrapping_sub(ldt));
        let periods = elapsed / self.decay_minutes;
        counter.saturating_sub(periods.min(255) as u8)
    }

    /// The clock RESTORE's `IDLETIME seconds` or `FREQ n` sets (Redis's
    /// `objectSetLRUOrLFU`): under LFU only FREQ counts, under LRU only IDLETIME; None when
    /// the option given does not apply to the mode (the key gets a new clock).
    pub fn restored(self, idle_s: Option<i64>, freq: Option<i64>, now_ms: i64) -> Option<u16> {
        if self.lfu {
            let f = freq?;
            Some(lfu_pack(minutes(now_ms), f.clamp(0, 255) as u8))
        } else {
            let idle = idle_s?;
            // Redis: lru_abs = now_s - idle; a time before the clock's start is clamped
            // (the clock then reads the maximum idle time).
            let now_s = now_ms.div_euclid(1000);
            let at = now_s.saturating_sub(idle.max(0));
            let at = if at < 0 {
                // Older than anything the clock can say: the largest idle time.
                now_s - (LRU_WRAP_SECONDS as i64 - 1)
            } else {
                at.max(now_s - (LRU_WRAP_SECONDS as i64 - 1))
            };
            Some(at.rem_euclid(LRU_WRAP_SECONDS as i64) as u16)
        }
    }
}

/// The LRU clock of `now_ms`: Unix seconds modulo 2^16.
#[inline]
pub fn seconds(now_ms: i64) -> u16 {
    (now_ms.max(0) as u64 / 1000) as u16
}

/// Unix minutes of `now_ms` modulo 2^8 (an LFU clock's high byte).
#[inline]
pub fn minutes(now_ms: i64) -> u8 {
    (now_ms.max(0) as u64 / 60_000) as u8
}

fn lfu_pack(minutes: u8, counter: u8) -> u16 {
    (u16::from(minutes) << 8) | u16::from(counter)
}

/// Idle milliseconds of an LRU clock at `now_ms` (Redis's `estimateObjectIdleTime`: a clock
/// ahead of now wrapped once).
pub fn idle_ms(clock: u16, now_ms: i64) -> u64 {
    u64::from(seconds(now_ms).wrapping_sub(clock)) * 1000
}

/// Redis's `LFULogIncr`: the counter grows by one with probability
/// 1 / ((counter - LFU_INIT_VAL) * log_factor + 1), never past 255. `r` is in [0, 1).
pub fn log_incr(counter: u8, log_factor: u32, r: f64) -> u8 {
    if counter == 255 {
        return 255;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

/// A small, fast pseudo-random generator for LFU increments (xorshift64*).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Default for Rng {
    fn default() -> Self {
        Rng(0x9E37_79B9_7F4A_7C15)
    }
}

impl Rng {
    /// A number in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LFU: ClockMode = ClockMode {
        lfu: true,
        log_factor: 10,
        decay_minutes: 1,
    };
    const LRU: ClockMode = ClockMode {
        lfu: false,
        log_factor: 10,
        decay_minutes: 1,
    };
    const T: i64 = 1_700_000_000_000;

    #[test]
    fn lru_idle_time_is_exact_to_the_second_and_wraps_once() {
        let c = LRU.new_clock(T);
        assert_eq!(idle_ms(c, T), 0);
        assert_eq!(idle_ms(c, T + 999), 0);
        assert_eq!(idle_ms(c, T + 1000), 1000);
        assert_eq!(idle_ms(c, T + 3_600_000 * 5), 3_600_000 * 5);
        assert_eq!(idle_ms(c, T + 65_535_000), 65_535_000);
        // One wrap further, the idle time starts again (as Redis's past its 194 days).
        assert_eq!(idle_ms(c, T + 65_536_000), 0);
        assert_eq!(
            LRU.touched(c, T + 7000, || unreachable!()),
            seconds(T + 7000)
        );
    }

    #[test]
    fn restore_idletime_and_freq_follow_the_mode() {
        let c = LRU.restored(Some(1000), None, T).unwrap();
        assert_eq!(idle_ms(c, T), 1_000_000);
        assert_eq!(LRU.restored(None, Some(7), T), None);
        let old = LRU.restored(Some(i64::MAX), None, T).unwrap();
        assert_eq!(idle_ms(old, T), (LRU_WRAP_SECONDS - 1) * 1000);
        let f = LFU.restored(None, Some(100), T).unwrap();
        assert_eq!(LFU.decayed(f, T), 100);
        assert_eq!(LFU.decayed(f, T + 60_000), 99);
        assert_eq!(LFU.restored(Some(5), None, T), None);
        assert_eq!(
            LFU.decayed(LFU.restored(None, Some(1000), T).unwrap(), T),
            255
        );
    }

    #[test]
    fn lfu_counter_is_redis_log_counter() {
        // A new key: LFU_INIT_VAL; its first access always counts (p = 1).
        let c = LFU.new_clock(T);
        assert_eq!(LFU.decayed(c, T), LFU_INIT_VAL);
        let c = LFU.touched(c, T, || 0.999);
        assert_eq!(LFU.decayed(c, T), LFU_INIT_VAL + 1);
        // Then with probability 1 / (1 * 10 + 1).
        assert_eq!(log_incr(6, 10, 1.0 / 11.0 - 1e-9), 7);
        assert_eq!(log_incr(6, 10, 1.0 / 11.0 + 1e-9), 6);
        assert_eq!(log_incr(255, 0, 0.0), 255);
        assert_eq!(
            log_incr(100, 0, 0.999),
            101,
            "log factor 0: every access counts"
        );
        // Many accesses: about what Redis's table in redis.conf says (factor 10: 100
        // hits reach about 10, 1,000 about 18).
        let mut rng = Rng::default();
        let mut c = LFU.new_clock(T);
        for _ in 0..1000 {
            c = LFU.touched(c, T, || rng.next_f64());
        }
        let n = LFU.decayed(c, T);
        assert!((14..=24).contains(&n), "1,000 hits gave {n}");
    }

    #[test]
    fn lfu_decays_one_per_period_modulo_256_minutes() {
        let c = LFU.restored(None, Some(50), T).unwrap();
        assert_eq!(LFU.decayed(c, T + 10 * 60_000), 40);
        let slow = ClockMode {
            decay_minutes: 10,
            ..LFU
        };
        assert_eq!(slow.decayed(c, T + 25 * 60_000), 48);
        let never = ClockMode {
            decay_minutes: 0,
            ..LFU
        };
        assert_eq!(never.decayed(c, T + 1000 * 60_000), 50);
        assert_eq!(LFU.decayed(c, T + 255 * 60_000), 0);
        // An access decays first, then counts, and restarts the period.
        let c2 = LFU.touched(c, T + 3 * 60_000, || 0.999);
        assert_eq!(LFU.decayed(c2, T + 3 * 60_000), 47);
    }

    #[test]
    fn modes_round_trip_through_bits() {
        for m in [
            LFU,
            LRU,
            ClockMode {
                lfu: true,
                log_factor: u32::MAX,
                decay_minutes: i32::MAX as u32,
            },
        ] {
            assert_eq!(ClockMode::from_bits(m.to_bits()), m);
        }
    }

    #[test]
    fn rng_is_in_the_unit_interval() {
        let mut r = Rng::default();
        let mut sum = 0.0;
        for _ in 0..10_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        assert!((4_500.0..5_500.0).contains(&sum));
    }
}
