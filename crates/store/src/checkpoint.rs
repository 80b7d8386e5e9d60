//! What an index checkpoint needs from the store.
//!
//! The index itself belongs to the caller (the server writes one checkpoint file per
//! worker, see `docs/storage-format.md`, Index checkpoint); the store provides:
//!
//! * [`Store::sealed_blocks`](crate::Store::sealed_blocks): at the start of a checkpoint,
//!   the blocks whose records are durable and never change again (sealed and synced, or
//!   found sealed by recovery), each with its identity (block sequence) and tombstone
//!   flag. The checkpoint records them as *covered*.
//! * [`Store::open_with_checkpoint`](crate::Store::open_with_checkpoint): recovery that
//!   reads every block header but skips the records of the blocks a [`CoveredSet`] says
//!   are covered and unchanged; every other block (open at the checkpoint start, written
//!   later, reclaimed and reused since) is scanned as usual.
//!
//! Validity is judged per block, never for the checkpoint as a whole: a block is covered
//! only if its header is sealed and carries the block sequence the checkpoint recorded
//! (a reclaimed block has its header zeroed, and a reused one gets a new block sequence),
//! so blocks freed by reclaim or defrag after the checkpoint are simply scanned or free.

use std::collections::HashMap;

use crate::format::{BlockHeader, BlockKind, BlockState};
use crate::store::BlockId;

/// One block covered by an index checkpoint (see [`Store::sealed_blocks`](crate::Store::sealed_blocks)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealedBlock {
    /// Which block.
    pub id: BlockId,
    /// Its block sequence (its identity: one use of the block).
    pub block_seq: u64,
    /// It holds at least one tombstone record (reclaim's log-tail rule needs it).
    pub tombstones: bool,
}

/// The blocks covered by every one of several checkpoints (one per worker): a block is
/// skipped at load only when all of them recorded it with the same block sequence (each
/// worker's keys in it are then in that worker's checkpoint) and its header still carries
/// that sequence and is sealed.
#[derive(Debug, Default)]
pub struct CoveredSet {
    /// Block → (block sequence, tombstones, number of checkpoints recording it).
    blocks: HashMap<BlockId, (u64, bool, usize)>,
    /// Checkpoints added.
    tables: usize,
}

impl CoveredSet {
    /// An empty set (covers nothing until a table is added).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one checkpoint's block table.
    pub fn add_table(&mut self, table: &[SealedBlock]) {
        for b in table {
            let e = self.blocks.entry(b.id).or_insert((b.block_seq, false, 0));
            if e.0 == b.block_seq {
                e.1 |= b.tombstones;
                e.2 += 1;
            } else {
                // Two checkpoints disagree about this block: never covered.
                e.2 = usize::MAX / 2;
            }
        }
        self.tables += 1;
    }

    /// `Some(tombstones)` when block `id` with `header` is covered by every table added,
    /// unchanged since; `None` when it must be scanned.
    pub fn covers(&self, id: BlockId, header: &BlockHeader) -> Option<bool> {
        if self.tables == 0 || header.kind != BlockKind::Data || header.state != BlockState::Sealed
        {
            return None;
        }
        let &(seq, tombstones, n) = self.blocks.get(&id)?;
        (n == self.tables && seq == header.block_seq).then_some(tombstones)
    }

    /// True when block `id` (currently at block sequence `block_seq`) is covered (the same
    /// rule as [`CoveredSet::covers`], for a block whose header was found sealed).
    pub fn contains(&self, id: BlockId, block_seq: u64) -> bool {
        self.tables > 0
            && self
                .blocks
                .get(&id)
                .is_some_and(|&(seq, _, n)| n == self.tables && seq == block_seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(block_seq: u64, state: BlockState) -> BlockHeader {
        BlockHeader {
            kind: BlockKind::Data,
            state,
            owner_worker: 0,
            block_index: 0,
            committed_len_bytes: 0,
            block_seq,
            first_mutation_seq: 1,
            last_mutation_seq: 1,
            device_id: [0; 16],
            summary_len_bytes: 0,
            summary_crc: 0,
        }
    }

    fn sb(block: u32, block_seq: u64, tombstones: bool) -> SealedBlock {
        SealedBlock {
            id: BlockId { device: 0, block },
            block_seq,
            tombstones,
        }
    }

    #[test]
    fn a_block_is_covered_only_by_every_table_with_the_same_identity() {
        let id = |block| BlockId { device: 0, block };
        let mut set = CoveredSet::new();
        assert_eq!(set.covers(id(1), &header(5, BlockState::Sealed)), None);
        set.add_table(&[sb(1, 5, false), sb(2, 6, true), sb(3, 7, false)]);
        set.add_table(&[sb(1, 5, false), sb(2, 6, false), sb(3, 8, false)]);
        // In both, same sequence: covered, tombstone flag from either.
        assert_eq!(
            set.covers(id(1), &header(5, BlockState::Sealed)),
            Some(false)
        );
        assert_eq!(
            set.covers(id(2), &header(6, BlockState::Sealed)),
            Some(true)
        );
        // Reused since (another sequence), or open: scanned.
        assert_eq!(set.covers(id(1), &header(9, BlockState::Sealed)), None);
        assert_eq!(set.covers(id(1), &header(5, BlockState::Open)), None);
        // The tables disagree, or only one has it.
        assert_eq!(set.covers(id(3), &header(7, BlockState::Sealed)), None);
        set.add_table(&[sb(1, 5, false)]);
        assert_eq!(set.covers(id(2), &header(6, BlockState::Sealed)), None);
        assert!(set.contains(id(1), 5));
        assert!(!set.contains(id(2), 6));
    }
}
