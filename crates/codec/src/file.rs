//! RDB **files** (Redis's `rdb.c`): the `REDIS` header and version, the opcodes between
//! values (auxiliary fields, database selectors and sizes, expiry times, LRU idle times and
//! LFU counters, function libraries) and the CRC64 trailer.
//!
//! [`FileWriter`] appends a file to an in-memory buffer that the caller drains to wherever
//! the file goes, checksumming what it hands out; [`FileReader`] walks a whole file held
//! in memory (a mapped file, or a full sync received into memory), checksumming what it
//! has read. Neither does I/O.

use crate::encode::Encoded;
use crate::rdb::{write_len, write_string, Reader};
use crate::{decode_value, rdb_type, DecodeError, RdbValue, RDB_VERSION};

/// RDB opcodes (`RDB_OPCODE_*` of Redis's `rdb.h`).
pub mod opcode {
    /// Cluster slot information (Redis 7.4+; skipped when read).
    pub const SLOT_INFO: u8 = 244;
    /// A function library (Redis 7.0+): its code.
    pub const FUNCTION2: u8 = 245;
    /// A function library in the pre-release 7.0 format (refused, as Redis refuses it).
    pub const FUNCTION_PRE_GA: u8 = 246;
    /// Module auxiliary data (refused: no modules).
    pub const MODULE_AUX: u8 = 247;
    /// The next key's LRU idle time, seconds.
    pub const IDLE: u8 = 248;
    /// The next key's LFU counter.
    pub const FREQ: u8 = 249;
    /// An auxiliary field: two strings.
    pub const AUX: u8 = 250;
    /// The sizes of the database being loaded (keys, keys with an expiry).
    pub const RESIZEDB: u8 = 251;
    /// The next key's expiry, Unix milliseconds (8 bytes, little-endian).
    pub const EXPIRETIME_MS: u8 = 252;
    /// The next key's expiry, Unix seconds (4 bytes, little-endian; old files).
    pub const EXPIRETIME: u8 = 253;
    /// The database of the keys that follow.
    pub const SELECTDB: u8 = 254;
    /// The end of the file (then the CRC64, from version 5 on).
    pub const EOF: u8 = 255;
}

/// The oldest RDB version read (Redis 2.x's files have no checksum: RDB 5+).
pub const MIN_FILE_VERSION: u16 = 1;

/// Why an RDB file is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileError {
    /// It does not start with `REDIS` and four digits.
    NotRdb,
    /// Written by a newer Redis than this reader knows.
    Version(u16),
    /// Damaged at `offset` (what was being read).
    Data {
        /// Byte offset of the item that failed.
        offset: usize,
        /// What failed.
        what: String,
    },
    /// Holds module data (no modules here).
    Module,
    /// Its checksum does not match its contents.
    Checksum {
        /// The CRC64 in the file.
        expected: u64,
        /// The CRC64 of the bytes read.
        actual: u64,
    },
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::NotRdb => f.write_str("Wrong signature trying to load DB from file"),
            FileError::Version(v) => write!(f, "Can't handle RDB format version {v}"),
            FileError::Data { offset, what } => {
                write!(f, "Bad data format at offset {offset}: {what}")
            }
            FileError::Module => f.write_str(
                "The RDB file contains module data (AUX or a module type), which is not supported",
            ),
            FileError::Checksum { expected, actual } => write!(
                f,
                "Wrong RDB checksum expected: ({expected:x}) got ({actual:x})"
            ),
        }
    }
}

impl std::error::Error for FileError {}

use crate::crc64::CRC64;

/// What comes with a key besides its value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyMeta {
    /// Expiry, Unix milliseconds.
    pub expire_at_ms: Option<i64>,
    /// LRU idle time, seconds.
    pub idle_s: Option<u64>,
    /// LFU counter.
    pub freq: Option<u8>,
}

/// Appends an RDB file to a buffer: the header first ([`FileWriter::new`]), then items,
/// then [`FileWriter::finish`]. The caller takes the bytes written so far with
/// [`FileWriter::take`] whenever it likes (the checksum covers what was taken).
pub struct FileWriter {
    buf: Vec<u8>,
    digest: crc::Digest<'static, u64, crc::Table<16>>,
    checksum: bool,
    taken_bytes: u64,
}

impl FileWriter {
    /// A file of RDB `version` (`REDIS0012`); `checksum`: write the CRC64 at the end (else
    /// zero, which readers take as "not checked", as Redis's `rdbchecksum no`).
    pub fn new(version: u16, checksum: bool) -> Self {
        let mut w = FileWriter {
            buf: Vec::with_capacity(64 << 10),
            digest: CRC64.digest(),
            checksum,
            taken_bytes: 0,
        };
        w.buf
            .extend_from_slice(format!("REDIS{version:04}").as_bytes());
        w
    }

    /// An auxiliary field (`redis-ver`, `ctime`, ...).
    pub fn aux(&mut self, key: &[u8], value: &[u8]) {
        self.buf.push(opcode::AUX);
        write_string(&mut self.buf, key);
        write_string(&mut self.buf, value);
    }

    /// The start of database `db`, which holds `keys` keys, `expires` of them with an
    /// expiry.
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) {
        self.buf.push(opcode::SELECTDB);
        write_len(&mut self.buf, db);
        self.buf.push(opcode::RESIZEDB);
        write_len(&mut self.buf, keys);
        write_len(&mut self.buf, expires);
    }

    /// A function library, by its code (`#!lua name=...`).
    pub fn function(&mut self, code: &[u8]) {
        self.buf.push(opcode::FUNCTION2);
        write_string(&mut self.buf, code);
    }

    /// A key and its encoded value.
    pub fn entry(&mut self, key: &[u8], value: &Encoded, meta: KeyMeta) {
        if let Some(ms) = meta.expire_at_ms {
            self.buf.push(opcode::EXPIRETIME_MS);
            self.buf.extend_from_slice(&ms.to_le_bytes());
        }
        if let Some(idle) = meta.idle_s {
            self.buf.push(opcode::IDLE);
            write_len(&mut self.buf, idle);
        }
        if let Some(freq) = meta.freq {
            self.buf.push(opcode::FREQ);
            self.buf.push(freq);
        }
        self.buf.push(value.rdb_type);
        write_string(&mut self.buf, key);
        self.buf.extend_from_slice(&value.bytes);
    }

    /// Bytes written and not taken yet.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Bytes handed out by [`FileWriter::take`] so far.
    pub fn taken_bytes(&self) -> u64 {
        self.taken_bytes
    }

    /// The bytes written since the last call, for the caller to write out.
    pub fn take(&mut self) -> Vec<u8> {
        let out = std::mem::replace(&mut self.buf, Vec::with_capacity(64 << 10));
        self.digest.update(&out);
        self.taken_bytes += out.len() as u64;
        out
    }

    /// The end of the file: what was not taken yet, the EOF opcode and the checksum.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(opcode::EOF);
        let mut out = std::mem::take(&mut self.buf);
        self.digest.update(&out);
        let crc = if self.checksum {
            self.digest.finalize()
        } else {
            0
        };
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// One item of an RDB file.
#[derive(Debug, PartialEq)]
pub enum Item {
    /// An auxiliary field.
    Aux {
        /// Its name.
        key: Vec<u8>,
        /// Its value.
        value: Vec<u8>,
    },
    /// The keys that follow are in this database.
    SelectDb(u64),
    /// The sizes of the current database (a hint).
    ResizeDb {
        /// Keys.
        keys: u64,
        /// Keys with an expiry.
        expires: u64,
    },
    /// A function library's code.
    Function(Vec<u8>),
    /// A key.
    Entry(Entry),
}

/// A key read from a file.
#[derive(Debug, PartialEq)]
pub struct Entry {
    /// The key.
    pub key: Vec<u8>,
    /// Its RDB type byte (some encodings say more than the value: `listpackex`).
    pub rdb_type: u8,
    /// Its value.
    pub value: RdbValue,
    /// Expiry, idle time, frequency.
    pub meta: KeyMeta,
}

/// Walks an RDB file held in memory, item by item, checking every length against the
/// bytes present and, at the end, the checksum.
pub struct FileReader<'a> {
    data: &'a [u8],
    r: Reader<'a>,
    version: u16,
    digest: crc::Digest<'static, u64, crc::Table<16>>,
    /// Bytes already fed to the digest.
    digested: usize,
    done: bool,
}

impl<'a> FileReader<'a> {
    /// A reader of `data`, after its header; refuses what is not an RDB file or is newer
    /// than [`RDB_VERSION`].
    pub fn new(data: &'a [u8]) -> Result<Self, FileError> {
        if data.len() < 9 || &data[..5] != b"REDIS" {
            return Err(FileError::NotRdb);
        }
        let digits = std::str::from_utf8(&data[5..9]).map_err(|_| FileError::NotRdb)?;
        let version: u16 = digits.parse().map_err(|_| FileError::NotRdb)?;
        if !(MIN_FILE_VERSION..=RDB_VERSION).contains(&version) {
            return Err(FileError::Version(version));
        }
        let mut r = Reader::new(data);
        r.take(9).expect("nine bytes checked");
        Ok(FileReader {
            data,
            r,
            version,
            digest: CRC64.digest(),
            digested: 0,
            done: false,
        })
    }

    /// The file's RDB version.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.r.position()
    }

    /// The file's length.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True for a file of no bytes (never: the header is checked).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    fn digest_to(&mut self, end: usize) {
        if end > self.digested {
            self.digest.update(&self.data[self.digested..end]);
            self.digested = end;
        }
    }

    /// The next item; `Ok(None)` after the EOF opcode (and a matching checksum).
    pub fn next_item(&mut self) -> Result<Option<Item>, FileError> {
        if self.done {
            return Ok(None);
        }
        let start = self.r.position();
        let bad = |e: DecodeError| FileError::Data {
            offset: start,
            what: e.to_string(),
        };
        let mut meta = KeyMeta::default();
        loop {
            let op = self.r.byte().map_err(bad)?;
            match op {
                opcode::EXPIRETIME_MS => {
                    meta.expire_at_ms = Some(self.r.millis().map_err(bad)? as i64);
                }
                opcode::EXPIRETIME => {
                    let b = self.r.take(4).map_err(bad)?;
                    let s = i32::from_le_bytes(b.try_into().expect("4 bytes"));
                    meta.expire_at_ms = Some(i64::from(s) * 1000);
                }
                opcode::IDLE => meta.idle_s = Some(self.r.length().map_err(bad)?),
                opcode::FREQ => meta.freq = Some(self.r.byte().map_err(bad)?),
                opcode::SELECTDB => {
                    let db = self.r.length().map_err(bad)?;
                    return Ok(Some(Item::SelectDb(db)));
                }
                opcode::RESIZEDB => {
                    let keys = self.r.length().map_err(bad)?;
                    let expires = self.r.length().map_err(bad)?;
                    return Ok(Some(Item::ResizeDb { keys, expires }));
                }
                opcode::SLOT_INFO => {
                    for _ in 0..3 {
                        self.r.length().map_err(bad)?;
                    }
                }
                opcode::AUX => {
                    let key = self.r.string().map_err(bad)?;
                    let value = self.r.string().map_err(bad)?;
                    return Ok(Some(Item::Aux { key, value }));
                }
                opcode::FUNCTION2 => {
                    let code = self.r.string().map_err(bad)?;
                    return Ok(Some(Item::Function(code)));
                }
                opcode::FUNCTION_PRE_GA => {
                    return Err(FileError::Data {
                        offset: start,
                        what: "a function library in the pre-release format of Redis 7.0".into(),
                    })
                }
                opcode::MODULE_AUX => return Err(FileError::Module),
                opcode::EOF => {
                    self.done = true;
                    if self.version >= 5 {
                        let end = self.r.position();
                        self.digest_to(end);
                        let b = self.r.take(8).map_err(bad)?;
                        let expected = u64::from_le_bytes(b.try_into().expect("8 bytes"));
                        let actual = self.digest.clone().finalize();
                        if expected != 0 && expected != actual {
                            return Err(FileError::Checksum { expected, actual });
                        }
                    }
                    return Ok(None);
                }
                ty => {
                    if ty == rdb_type::MODULE_2 || ty == rdb_type::MODULE_PRE_GA {
                        return Err(FileError::Module);
                    }
                    let key = self.r.string().map_err(bad)?;
                    let value = decode_value(ty, &mut self.r).map_err(|e| FileError::Data {
                        offset: start,
                        what: format!(
                            "{e} (the value of key '{}', RDB type {ty})",
                            String::from_utf8_lossy(&key)
                        ),
                    })?;
                    // Feed the digest every few MB rather than per key.
                    let at = self.r.position();
                    if at - self.digested >= 4 << 20 {
                        self.digest_to(at);
                    }
                    return Ok(Some(Item::Entry(Entry {
                        key,
                        rdb_type: ty,
                        value,
                        meta,
                    })));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode_value;

    fn sample_file(checksum: bool) -> Vec<u8> {
        let mut w = FileWriter::new(12, checksum);
        w.aux(b"redis-ver", b"8.0.2");
        w.select_db(0, 2, 1);
        w.entry(
            b"s",
            &encode_value(&RdbValue::String(b"hello".to_vec())),
            KeyMeta {
                expire_at_ms: Some(4_102_444_800_000),
                ..KeyMeta::default()
            },
        );
        let mut out = w.take();
        w.entry(
            b"l",
            &encode_value(&RdbValue::List(vec![b"a".to_vec(), b"b".to_vec()])),
            KeyMeta {
                idle_s: Some(7),
                ..KeyMeta::default()
            },
        );
        w.select_db(3, 1, 0);
        w.entry(
            b"z",
            &encode_value(&RdbValue::Zset(vec![(b"m".to_vec(), 1.5)])),
            KeyMeta {
                freq: Some(9),
                ..KeyMeta::default()
            },
        );
        w.function(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)");
        out.extend(w.finish());
        out
    }

    fn items(data: &[u8]) -> Result<Vec<Item>, FileError> {
        let mut r = FileReader::new(data)?;
        let mut out = Vec::new();
        while let Some(i) = r.next_item()? {
            out.push(i);
        }
        Ok(out)
    }

    #[test]
    fn a_written_file_reads_back_item_for_item() {
        let data = sample_file(true);
        assert_eq!(&data[..9], b"REDIS0012");
        let got = items(&data).unwrap();
        assert_eq!(got.len(), 9, "{got:?}");
        assert_eq!(got[1], Item::SelectDb(0));
        assert_eq!(
            got[2],
            Item::ResizeDb {
                keys: 2,
                expires: 1
            }
        );
        match &got[3] {
            Item::Entry(e) => {
                assert_eq!(e.key, b"s");
                assert_eq!(e.value, RdbValue::String(b"hello".to_vec()));
                assert_eq!(e.meta.expire_at_ms, Some(4_102_444_800_000));
            }
            other => panic!("{other:?}"),
        }
        match &got[4] {
            Item::Entry(e) => assert_eq!(e.meta.idle_s, Some(7)),
            other => panic!("{other:?}"),
        }
        assert_eq!(got[5], Item::SelectDb(3));
        match &got[7] {
            Item::Entry(e) => assert_eq!(e.meta.freq, Some(9)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_damaged_byte_fails_the_checksum_and_no_checksum_is_not_checked() {
        let mut data = sample_file(true);
        // A byte of the string value "hello".
        let at = data.windows(5).position(|w| w == b"hello").unwrap();
        data[at] = b'j';
        assert!(matches!(items(&data), Err(FileError::Checksum { .. })));
        let mut data = sample_file(false);
        data[at] = b'j';
        assert!(items(&data).is_ok());
    }

    #[test]
    fn truncated_files_and_other_headers_are_errors_not_panics() {
        let data = sample_file(true);
        for cut in 0..data.len() {
            assert!(items(&data[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(items(b"RADIS0009\xff").unwrap_err(), FileError::NotRdb);
        assert_eq!(items(b"REDIS0099\xff").unwrap_err(), FileError::Version(99));
    }
}
