//! Which physical database holds each logical database (SWAPDB).
//!
//! Records on the data devices name the database their key belongs to (the LEB128 prefix
//! of the record key, see `docs/storage-format.md`). SWAPDB does not rewrite them: every
//! record keeps the *physical* database it was written in, and this map says which
//! physical database each database number a client selects (*logical*) is. SWAPDB swaps
//! two entries of the map; each worker swaps its two in-memory tables and translates
//! between the numbers where records are written or read (`Keyspace::physical_db`,
//! `Keyspace::logical_db`, the index checkpoint).
//!
//! The map is kept in `skerry-dbmap` in the data directory (`--dir`), tied to the data
//! devices by their `store_id`. SWAPDB, with every worker held, first makes every
//! worker's records durable, then writes the new map (temporary file, fsync, rename,
//! directory fsync), and only then swaps the tables and replies: after a crash the
//! devices and the map describe a state at or after the last acknowledged SWAPDB, and
//! every record is read back into the database it was written to. Without the file every
//! database is its own (the identity map).
//!
//! File layout (little-endian): `"SKERRYDM"`, version u32 (`1`), store_id (16 bytes), count
//! u32, `count` u32 entries (entry `l` = the physical database of logical database `l`),
//! CRC32C u32 over everything before it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

const MAGIC: &[u8; 8] = b"SKERRYDM";
const VERSION: u32 = 1;
/// The file's name in the data directory.
pub const FILE_NAME: &str = "skerry-dbmap";

struct State {
    dir: PathBuf,
    store_id: [u8; 16],
    map: Vec<usize>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Encodes a map for `store_id`.
fn encode(store_id: &[u8; 16], map: &[usize]) -> Vec<u8> {
    let mut out = Vec::with_capacity(36 + 4 * map.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(store_id);
    out.extend_from_slice(&(map.len() as u32).to_le_bytes());
    for &p in map {
        out.extend_from_slice(&(p as u32).to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a map file: its store id and entries (None: not a valid map file).
fn decode(buf: &[u8]) -> Option<([u8; 16], Vec<usize>)> {
    if buf.len() < 36 || &buf[..8] != MAGIC {
        return None;
    }
    let (body, crc) = buf.split_at(buf.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?))
    };
    if u32_at(8)? != VERSION {
        return None;
    }
    let store_id: [u8; 16] = body[12..28].try_into().ok()?;
    let count = u32_at(28)? as usize;
    if body.len() != 32 + 4 * count {
        return None;
    }
    let map = (0..count)
        .map(|i| u32_at(32 + 4 * i).map(|v| v as usize))
        .collect::<Option<Vec<usize>>>()?;
    Some((store_id, map))
}

/// True when `map` is a permutation of `0..map.len()`.
fn is_permutation(map: &[usize]) -> bool {
    let mut seen = vec![false; map.len()];
    for &p in map {
        match seen.get_mut(p) {
            Some(s) if !*s => *s = true,
            _ => return false,
        }
    }
    true
}

/// Fits a stored map to `databases` databases: entries past the stored count are their
/// own; a stored map longer than `databases` is cut only if what remains is still a
/// permutation (Err otherwise: some database's keys would be lost).
fn fit(mut map: Vec<usize>, databases: usize) -> Result<Vec<usize>, String> {
    if map.len() < databases {
        map.extend(map.len()..databases);
    } else if map.len() > databases {
        map.truncate(databases);
        if !is_permutation(&map) {
            return Err(format!(
                "the database map ({FILE_NAME}, written by SWAPDB) places a database below 'databases' ({databases}) beyond it; start with the 'databases' it was written with"
            ));
        }
    }
    if !is_permutation(&map) {
        return Err(format!("{FILE_NAME} is not a permutation of the databases"));
    }
    Ok(map)
}

/// Loads the map for the data devices `store_id` from `dir` (the identity when there is
/// none, or when it belongs to other data devices) and keeps it for [`swap`].
pub fn load(dir: &Path, store_id: [u8; 16], databases: usize) -> Result<Vec<usize>, String> {
    let path = dir.join(FILE_NAME);
    let map = match std::fs::read(&path) {
        Ok(buf) => match decode(&buf) {
            Some((id, map)) if id == store_id => fit(map, databases)?,
            Some(_) => {
                tracing::warn!("{} belongs to other data devices; ignored", path.display());
                (0..databases).collect()
            }
            None => return Err(format!("{} is damaged", path.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (0..databases).collect(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if map.iter().enumerate().any(|(l, &p)| l != p) {
        tracing::info!("Database map (SWAPDB): {map:?}");
    }
    *STATE.lock().unwrap_or_else(|p| p.into_inner()) = Some(State {
        dir: dir.to_path_buf(),
        store_id,
        map: map.clone(),
    });
    Ok(map)
}

/// The map [`load`] loaded, as SWAPDB left it (None before [`load`]).
pub fn current() -> Option<Vec<usize>> {
    STATE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|s| s.map.clone())
}

/// Writes `bytes` to `dir/name` durably: temporary file, fsync, rename, directory fsync.
fn write_durably(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(FILE_NAME))?;
    std::fs::File::open(dir)?.sync_all()
}

/// Swaps logical databases `a` and `b` in the stored map and writes it durably. Called
/// with every worker held and their records durable; the workers swap their tables after.
pub fn swap(a: usize, b: usize) -> Result<(), String> {
    let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(st) = guard.as_mut() else {
        return Err("the database map is not loaded".into());
    };
    let mut map = st.map.clone();
    map.swap(a, b);
    write_durably(&st.dir, &encode(&st.store_id, &map))
        .map_err(|e| format!("cannot write {}: {e}", st.dir.join(FILE_NAME).display()))?;
    st.map = map;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let id = [7u8; 16];
        let map = vec![1, 0, 2, 5, 4, 3];
        let buf = encode(&id, &map);
        assert_eq!(decode(&buf), Some((id, map.clone())));
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            assert_eq!(decode(&bad), None, "flip at {i}");
        }
        assert_eq!(decode(&buf[..buf.len() - 1]), None);
    }

    #[test]
    fn fits_databases() {
        assert_eq!(fit(vec![1, 0], 4).unwrap(), vec![1, 0, 2, 3]);
        assert_eq!(fit(vec![1, 0, 2, 3], 2).unwrap(), vec![1, 0]);
        assert!(fit(vec![3, 1, 2, 0], 2).is_err());
        assert!(fit(vec![0, 0], 2).is_err());
    }
}
