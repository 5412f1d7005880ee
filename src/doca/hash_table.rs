//! DPA hash tables (`doca_dpa_hash_table`): created on the host in DPA memory, used by DPA
//! code (`doca_dpa_dev_hash_table_add` / `_remove` / `_find`).
//!
//! The table is `struct doca_dpa_hash_table_block` (mlx5_dpa_doca.h): open addressing with
//! linear probing over twice the requested entries (a power of two), 16 bytes an entry, under
//! one AMO lock; removed entries stay as tombstones until reused. A table holds the requested
//! number of keys; adding to a full one stops the DPA thread (DOCA calls it anomalous).

use crate::dpa::{DpaBuf, Process, StepExt};

use super::DocaError;

/// Most entries one table may be created with.
pub const MAX_HASH_TABLE_ENTRIES: u32 = 1 << 20;
const HEADER: u64 = 0x10;
const ENTRY: u64 = 16;

/// A hash table in DPA memory; freed when dropped (DPA code must be done with it).
#[derive(Debug)]
pub struct DpaHashTable {
    buf: DpaBuf,
    num_entries: u32,
    capacity: u32,
}

impl DpaHashTable {
    pub(crate) fn create(process: &Process, num_entries: u32) -> Result<DpaHashTable, DocaError> {
        if num_entries == 0 || num_entries > MAX_HASH_TABLE_ENTRIES {
            return Err(DocaError::InvalidValue(format!(
                "a hash table of {num_entries} entries (1 ..= {MAX_HASH_TABLE_ENTRIES})"
            )));
        }
        let capacity = num_entries.next_power_of_two() * 2;
        let len = HEADER + ENTRY * u64::from(capacity);
        let buf = process.alloc(len).step("allocating the hash table")?;
        const W: &str = "initialising the hash table";
        process.memset(buf.daddr(), 0, len as usize).step(W)?;
        process
            .copy_to_dev(buf.daddr(), &capacity.to_le_bytes())
            .step(W)?;
        Ok(DpaHashTable {
            buf,
            num_entries,
            capacity,
        })
    }

    /// `doca_dpa_hash_table_get_dpa_handle`.
    pub fn dpa_handle(&self) -> u64 {
        self.buf.daddr()
    }

    /// The entries it was created for.
    pub fn num_entries(&self) -> u32 {
        self.num_entries
    }

    /// Its slots (twice `num_entries`, rounded up to a power of two).
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
}
