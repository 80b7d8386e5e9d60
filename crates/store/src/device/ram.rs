//! A RAM device for tests, with a volatile write cache and fault injection.
//!
//! Model: the device holds a *durable* image (what survives power loss) and a
//! *visible* image (what reads return). A write updates the visible image at
//! once and is queued as *unsynced*; [`Device::sync`] makes every queued write
//! durable. [`RamControl::crash`] discards unsynced writes (optionally keeping
//! some of them, and a torn prefix of the next one cut at a 512-byte sector
//! boundary) and "reboots": the visible image becomes the durable one.
//!
//! Handles are cheap clones sharing one state (`Arc<Mutex<..>>`), so several
//! threads may each hold one, as with a real device.

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use compio::BufResult;

use super::{assert_io_ok, Device};
use crate::aligned::{AlignedBuf, WriteBuf};

/// Granularity of torn writes: a sector is written entirely or not at all.
pub const SECTOR_BYTES: usize = 512;

/// A RAM-backed [`Device`] (tests only: the whole device lives in memory twice).
#[derive(Clone)]
pub struct RamDevice {
    shared: Arc<Mutex<State>>,
    size_bytes: u64,
    align_bytes: usize,
}

/// Controls faults and crashes of a [`RamDevice`] (shares its state).
#[derive(Clone)]
pub struct RamControl {
    shared: Arc<Mutex<State>>,
    size_bytes: u64,
    align_bytes: usize,
}

/// Which operation a [`Fault`] applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOp {
    /// [`Device::read_at`].
    Read,
    /// [`Device::write_at`] (a failed write is not applied).
    Write,
    /// [`Device::sync`] (a failed sync makes nothing durable).
    Sync,
}

/// An injected I/O error: operations of kind `op` fail with OS error `errno`
/// after `skip_ops` further such operations have succeeded, once or (when
/// `persistent`) from then on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The operation kind that fails.
    pub op: FaultOp,
    /// The OS error number reported (`libc::EIO`, `libc::ENOSPC`, ...).
    pub errno: i32,
    /// Matching operations that still succeed before the fault fires.
    pub skip_ops: u64,
    /// Keep failing after the first failure (until [`RamControl::clear_faults`]).
    pub persistent: bool,
}

impl Fault {
    /// EIO on the next operation of kind `op`.
    pub fn eio(op: FaultOp) -> Self {
        Self {
            op,
            errno: libc::EIO,
            skip_ops: 0,
            persistent: false,
        }
    }

    /// ENOSPC on the next operation of kind `op`.
    pub fn enospc(op: FaultOp) -> Self {
        Self {
            errno: libc::ENOSPC,
            ..Self::eio(op)
        }
    }

    /// Lets `skip_ops` matching operations succeed first (fires on the
    /// `skip_ops + 1`-th).
    pub fn after(self, skip_ops: u64) -> Self {
        Self { skip_ops, ..self }
    }

    /// Keeps failing once fired.
    pub fn persistent(self) -> Self {
        Self {
            persistent: true,
            ..self
        }
    }
}

/// What survives a [`RamControl::crash`] among the unsynced writes, in the
/// order they were issued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashSpec {
    /// The first `keep_writes` unsynced writes become durable entirely.
    pub keep_writes: usize,
    /// Then the first `torn_bytes` bytes of the next unsynced write (a multiple
    /// of [`SECTOR_BYTES`]; 0 for none).
    pub torn_bytes: usize,
}

impl CrashSpec {
    /// Every unsynced write is lost.
    pub fn lose_unsynced() -> Self {
        Self::default()
    }

    /// Every unsynced write but the last survives, and the last one keeps only
    /// its first `torn_bytes` bytes (a multiple of [`SECTOR_BYTES`]).
    /// `pending` is the number of unsynced writes
    /// ([`RamControl::unsynced_writes`]`.len()`).
    pub fn torn_last(pending: usize, torn_bytes: usize) -> Self {
        Self {
            keep_writes: pending.saturating_sub(1),
            torn_bytes,
        }
    }
}

/// Operation counters of a [`RamDevice`] (all handles together).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RamStats {
    /// Successful reads.
    pub reads: u64,
    /// Acknowledged writes (including dropped ones).
    pub writes: u64,
    /// Acknowledged syncs.
    pub syncs: u64,
    /// Writes acknowledged but dropped after the crash point.
    pub dropped_writes: u64,
    /// Operations failed by an injected fault.
    pub injected_errors: u64,
    /// Crashes simulated.
    pub crashes: u64,
}

struct Unsynced {
    offset_bytes: u64,
    data: Vec<u8>,
}

struct ArmedFault {
    fault: Fault,
    remaining_skip: u64,
}

struct State {
    durable: Vec<u8>,
    visible: Vec<u8>,
    unsynced: Vec<Unsynced>,
    faults: Vec<ArmedFault>,
    /// Writes still applied before the power cut; `None` = no crash point.
    writes_until_power_cut: Option<u64>,
    powered_off: bool,
    stats: RamStats,
}

impl State {
    /// Returns the injected error for this operation, if one fires.
    fn check_fault(&mut self, op: FaultOp) -> Option<io::Error> {
        let mut fired = None;
        for (i, armed) in self.faults.iter_mut().enumerate() {
            if armed.fault.op != op {
                continue;
            }
            if armed.remaining_skip > 0 {
                armed.remaining_skip -= 1;
                continue;
            }
            fired = Some((i, armed.fault));
            break;
        }
        let (i, fault) = fired?;
        if !fault.persistent {
            self.faults.remove(i);
        }
        self.stats.injected_errors += 1;
        Some(io::Error::from_raw_os_error(fault.errno))
    }
}

fn lock(shared: &Mutex<State>) -> MutexGuard<'_, State> {
    // A test that panicked while holding the lock leaves consistent state.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl RamDevice {
    /// A zero-filled device of `size_bytes` with direct-I/O alignment
    /// `align_bytes` (a power of two ≥ 512 dividing `size_bytes`).
    pub fn new(size_bytes: u64, align_bytes: usize) -> Self {
        let size = usize::try_from(size_bytes).expect("RAM device too large");
        Self::from_image(vec![0; size], align_bytes)
    }

    /// A device whose durable content is `image` (e.g. a
    /// [`RamControl::durable_image`] taken earlier).
    pub fn from_image(image: Vec<u8>, align_bytes: usize) -> Self {
        assert!(
            align_bytes.is_power_of_two() && align_bytes >= SECTOR_BYTES,
            "alignment must be a power of two >= {SECTOR_BYTES}"
        );
        assert!(
            image.len().is_multiple_of(align_bytes),
            "device size must be a multiple of the alignment"
        );
        let size_bytes = image.len() as u64;
        let state = State {
            visible: image.clone(),
            durable: image,
            unsynced: Vec::new(),
            faults: Vec::new(),
            writes_until_power_cut: None,
            powered_off: false,
            stats: RamStats::default(),
        };
        Self {
            shared: Arc::new(Mutex::new(state)),
            size_bytes,
            align_bytes,
        }
    }

    /// The fault-injection and crash handle of this device.
    pub fn control(&self) -> RamControl {
        RamControl {
            shared: self.shared.clone(),
            size_bytes: self.size_bytes,
            align_bytes: self.align_bytes,
        }
    }
}

impl fmt::Debug for RamDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RamDevice")
            .field("size_bytes", &self.size_bytes)
            .field("align_bytes", &self.align_bytes)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for RamControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RamControl")
            .field("size_bytes", &self.size_bytes)
            .finish_non_exhaustive()
    }
}

impl Device for RamDevice {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn align_bytes(&self) -> usize {
        self.align_bytes
    }

    async fn read_at(
        &self,
        mut buf: AlignedBuf,
        offset_bytes: u64,
    ) -> BufResult<usize, AlignedBuf> {
        assert_io_ok(self.size_bytes, self.align_bytes, &buf, offset_bytes);
        let mut state = lock(&self.shared);
        if let Some(err) = state.check_fault(FaultOp::Read) {
            return BufResult(Err(err), buf);
        }
        let start = offset_bytes as usize;
        let len = buf.len_bytes();
        buf.as_mut_slice()
            .copy_from_slice(&state.visible[start..start + len]);
        state.stats.reads += 1;
        BufResult(Ok(len), buf)
    }

    async fn write_at<B: WriteBuf>(&self, buf: B, offset_bytes: u64) -> BufResult<usize, B> {
        assert_io_ok(self.size_bytes, self.align_bytes, &buf, offset_bytes);
        let mut state = lock(&self.shared);
        if let Some(err) = state.check_fault(FaultOp::Write) {
            return BufResult(Err(err), buf);
        }
        let len = buf.bytes().len();
        state.stats.writes += 1;
        match state.writes_until_power_cut {
            Some(0) => state.powered_off = true,
            Some(ref mut n) => *n -= 1,
            None => {}
        }
        if state.powered_off {
            state.stats.dropped_writes += 1;
            return BufResult(Ok(len), buf);
        }
        let start = offset_bytes as usize;
        state.visible[start..start + len].copy_from_slice(buf.bytes());
        state.unsynced.push(Unsynced {
            offset_bytes,
            data: buf.bytes().to_vec(),
        });
        BufResult(Ok(len), buf)
    }

    async fn sync(&self) -> io::Result<()> {
        let mut state = lock(&self.shared);
        if let Some(err) = state.check_fault(FaultOp::Sync) {
            return Err(err);
        }
        state.stats.syncs += 1;
        if state.powered_off {
            return Ok(());
        }
        let unsynced = std::mem::take(&mut state.unsynced);
        for w in &unsynced {
            let start = w.offset_bytes as usize;
            state.durable[start..start + w.data.len()].copy_from_slice(&w.data);
        }
        Ok(())
    }
}

impl RamControl {
    /// A new device handle on the same storage (e.g. for another thread, or to
    /// "reopen" after [`RamControl::crash`]).
    pub fn device(&self) -> RamDevice {
        RamDevice {
            shared: self.shared.clone(),
            size_bytes: self.size_bytes,
            align_bytes: self.align_bytes,
        }
    }

    /// Arms an injected error.
    pub fn inject(&self, fault: Fault) {
        lock(&self.shared).faults.push(ArmedFault {
            remaining_skip: fault.skip_ops,
            fault,
        });
    }

    /// Removes every armed fault.
    pub fn clear_faults(&self) {
        lock(&self.shared).faults.clear();
    }

    /// Sets a crash point: the next `writes` writes are applied, every later
    /// write is acknowledged but dropped, and later syncs make nothing durable
    /// (the power is gone; call [`RamControl::crash`] to decide what survived).
    pub fn set_crash_point(&self, writes: u64) {
        lock(&self.shared).writes_until_power_cut = Some(writes);
    }

    /// Offsets and lengths of the writes not yet made durable, oldest first.
    pub fn unsynced_writes(&self) -> Vec<(u64, usize)> {
        lock(&self.shared)
            .unsynced
            .iter()
            .map(|w| (w.offset_bytes, w.data.len()))
            .collect()
    }

    /// Simulates a power loss and restart: the unsynced writes selected by
    /// `spec` become durable (in issue order), the others are lost, and reads
    /// then return the durable bytes. Clears the crash point (faults stay).
    ///
    /// # Panics
    /// If `spec.torn_bytes` is not a multiple of [`SECTOR_BYTES`], or is not
    /// shorter than the write it tears.
    pub fn crash(&self, spec: CrashSpec) {
        assert!(
            spec.torn_bytes.is_multiple_of(SECTOR_BYTES),
            "a torn write is cut at a {SECTOR_BYTES}-byte sector boundary"
        );
        let mut state = lock(&self.shared);
        let unsynced = std::mem::take(&mut state.unsynced);
        let keep = spec.keep_writes.min(unsynced.len());
        for w in &unsynced[..keep] {
            let start = w.offset_bytes as usize;
            state.durable[start..start + w.data.len()].copy_from_slice(&w.data);
        }
        if spec.torn_bytes > 0 {
            if let Some(w) = unsynced.get(keep) {
                assert!(
                    spec.torn_bytes < w.data.len(),
                    "torn prefix {} must be shorter than the write ({})",
                    spec.torn_bytes,
                    w.data.len()
                );
                let start = w.offset_bytes as usize;
                state.durable[start..start + spec.torn_bytes]
                    .copy_from_slice(&w.data[..spec.torn_bytes]);
            }
        }
        let durable = state.durable.clone();
        state.visible = durable;
        state.writes_until_power_cut = None;
        state.powered_off = false;
        state.stats.crashes += 1;
    }

    /// Flips bit `bit` (0..8) of the byte at `offset_bytes`, in every version of
    /// that byte the device holds (durable, visible and unsynced), as media
    /// corruption would.
    pub fn flip_bit(&self, offset_bytes: u64, bit: u8) {
        assert!(bit < 8, "bit index {bit} out of range");
        assert!(offset_bytes < self.size_bytes, "offset past the device end");
        let mask = 1u8 << bit;
        let at = offset_bytes as usize;
        let mut state = lock(&self.shared);
        state.durable[at] ^= mask;
        state.visible[at] ^= mask;
        for w in &mut state.unsynced {
            let start = w.offset_bytes as usize;
            if (start..start + w.data.len()).contains(&at) {
                w.data[at - start] ^= mask;
            }
        }
    }

    /// A copy of the durable bytes (what a crash right now would keep with
    /// [`CrashSpec::lose_unsynced`]).
    pub fn durable_image(&self) -> Vec<u8> {
        lock(&self.shared).durable.clone()
    }

    /// A copy of the bytes reads currently return.
    pub fn visible_image(&self) -> Vec<u8> {
        lock(&self.shared).visible.clone()
    }

    /// Operation counters.
    pub fn stats(&self) -> RamStats {
        lock(&self.shared).stats
    }
}
