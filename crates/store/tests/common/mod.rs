//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use skerry_store::{AlignedBuf, Device};

/// Opens the data file at `path` with the default options (no growth) and recovers it,
/// collecting the recovered records into an index.
pub async fn reopen_file(
    path: &Path,
) -> (
    skerry_store::Store,
    skerry_store::RecoveredIndex,
    skerry_store::Recovery,
) {
    let dev = skerry_store::device::FileDevice::open(path).await.unwrap();
    let mut index = skerry_store::RecoveredIndex::default();
    let (store, rec) = skerry_store::Store::create_or_open(
        vec![skerry_store::device::AnyDevice::File(dev)],
        &skerry_store::StoreOptions::default(),
        |r| index.apply(r),
    )
    .await
    .unwrap();
    (store, index, rec)
}

/// Runs `f` on a compio runtime configured like a Skerry worker.
pub fn run<F: Future>(f: F) -> F::Output {
    let mut proactor = compio::driver::ProactorBuilder::new();
    proactor.single_issuer(true).defer_taskrun(true);
    compio::runtime::RuntimeBuilder::new()
        .with_proactor(proactor)
        .build()
        .expect("compio runtime")
        .block_on(f)
}

fn accepts_o_direct(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join(format!(".skerry-odirect-probe-{}", std::process::id()));
    let ok = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// A fresh empty directory on a file system that accepts `O_DIRECT` (tmpfs
/// does not): the system temp dir, else cargo's per-target temp dir.
pub fn temp_dir(name: &str) -> TempDir {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let candidates = [
        std::env::temp_dir(),
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        PathBuf::from("/var/tmp"),
    ];
    let base = candidates
        .into_iter()
        .find(|d| accepts_o_direct(d))
        .expect("no directory accepts O_DIRECT");
    let dir = base.join(format!(
        "skerry-store-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    TempDir(dir)
}

/// A directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A buffer of `len` bytes filled with `byte`, aligned for `device`.
pub fn filled<D: Device>(device: &D, len: usize, byte: u8) -> AlignedBuf {
    let mut buf = AlignedBuf::zeroed(len, device.align_bytes());
    buf.fill(byte);
    buf
}

/// Reads `len` bytes at `offset` and returns them (panics on error).
pub async fn read<D: Device>(device: &D, offset: u64, len: usize) -> Vec<u8> {
    let buf = AlignedBuf::zeroed(len, device.align_bytes());
    let compio::BufResult(res, buf) = device.read_at(buf, offset).await;
    assert_eq!(res.expect("read"), len);
    buf.to_vec()
}

/// Writes `len` bytes of `byte` at `offset` (panics on error).
pub async fn write<D: Device>(device: &D, offset: u64, len: usize, byte: u8) {
    let compio::BufResult(res, _) = device.write_at(filled(device, len, byte), offset).await;
    assert_eq!(res.expect("write"), len);
}

/// Small stores on the RAM device (64 KiB blocks), shared by the space and adoption tests.
pub mod small {
    use skerry_store::device::RamDevice;
    use skerry_store::format::{RecordKind, RecordMeta, RESERVED_BYTES, VALUE_TYPE_STRING};
    use skerry_store::StoreOptions;

    /// Block size of these stores.
    pub const BLOCK_BYTES: u64 = 64 << 10;

    /// Options formatting a store with [`BLOCK_BYTES`] blocks.
    pub fn opts() -> StoreOptions {
        StoreOptions {
            block_size_bytes: BLOCK_BYTES,
            ..StoreOptions::default()
        }
    }

    /// A fresh RAM device with room for `blocks` blocks.
    pub fn ram(blocks: u64) -> RamDevice {
        RamDevice::new(RESERVED_BYTES + blocks * BLOCK_BYTES, 512)
    }

    /// A value of `len` bytes that differs by `tag`.
    pub fn val(tag: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| tag.wrapping_mul(31) ^ (i as u8)).collect()
    }

    /// Formats the empty RAM device of `ctl` and opens worker 0's writer on it
    /// (`appendfsync everysec`).
    pub async fn fresh_writer(
        ctl: &skerry_store::device::RamControl,
    ) -> (skerry_store::Store, skerry_store::Writer) {
        use skerry_store::{Durability, Store, Writer};
        let (store, _) = Store::create_or_open(vec![ctl.device().into()], &opts(), |_| {})
            .await
            .expect("format");
        store.recovery_done();
        let w = Writer::open(store.clone(), 0, Durability::EverySec, 0)
            .await
            .unwrap();
        (store, w)
    }

    fn meta(kind: RecordKind, seq: u64) -> RecordMeta {
        RecordMeta {
            kind,
            value_type: VALUE_TYPE_STRING,
            flags: 0,
            mutation_seq: seq,
            expiry_ms: 0,
        }
    }

    /// A value record header with mutation sequence `seq`.
    pub fn value(seq: u64) -> RecordMeta {
        meta(RecordKind::Value, seq)
    }

    /// A tombstone record header with mutation sequence `seq`.
    pub fn tombstone(seq: u64) -> RecordMeta {
        meta(RecordKind::Tombstone, seq)
    }

    /// Reopens the store on the (crashed) RAM device of `ctl` and checks that recovery
    /// finds exactly the `acked` (key, value, location) records, with no truncation and no
    /// damaged record, each key at its location and each value read back whole.
    pub fn assert_recovers_exactly(
        ctl: &skerry_store::device::RamControl,
        acked: &[(String, Vec<u8>, skerry_store::Location)],
    ) {
        use skerry_store::{Durability, RecoveredIndex, Store, Writer};
        super::run(async {
            let mut index = RecoveredIndex::default();
            let (store, rec) = Store::create_or_open(vec![ctl.device().into()], &opts(), |r| {
                index.apply(r);
            })
            .await
            .expect("reopen");
            assert!(rec.truncations.is_empty(), "{:?}", rec.truncations);
            assert_eq!(rec.corrupt_records, 0);
            assert_eq!(rec.records, acked.len() as u64);
            let w = Writer::open(store.clone(), 0, Durability::EverySec, rec.max_mutation_seq)
                .await
                .unwrap();
            for (k, v, l) in acked {
                let e = index.get(k.as_bytes()).expect("recovered");
                assert_eq!(e.location, *l, "{k}");
                assert_eq!(w.read(l).await.unwrap().value(), v.as_slice(), "{k}");
            }
        });
    }
}

/// The value of the record at `loc` in `image`, a RAM device's bytes (recovery hands out
/// locations, not values), CRC-checked.
pub fn value_in(
    image: &[u8],
    store: &skerry_store::Store,
    loc: &skerry_store::Location,
) -> Vec<u8> {
    use skerry_store::format::{decode_record, BlockHeader};
    let start = store.block_offset_bytes(loc.block_id()) as usize;
    let header = BlockHeader::decode(&image[start..])
        .expect("block header")
        .expect("a used block");
    let at = start + loc.offset_bytes as usize;
    let r = decode_record(&image[at..at + loc.len_bytes as usize], header.block_seq)
        .expect("an intact record")
        .expect("a record");
    r.value.to_vec()
}
