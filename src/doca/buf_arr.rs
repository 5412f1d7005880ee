//! Buffer arrays with a DPA target (`doca_buf_arr` + `doca_buf_arr_set_target_dpa`): an array
//! of buffers in DPA memory that DPA code names by one handle (`doca_dpa_dev_buf_arr_t`) and
//! reads and changes with `doca_dpa_dev_buf_*` (`doca_dpa_dev_buf.h`).
//!
//! Each buffer is `struct doca_dpa_buf` of `mlx5_dpa_doca.h` (this project's layout; DOCA's is
//! not public past 2.6): its address, its length and its memory map's key, with
//! [`MLX5_DPA_DOCA_MMAP_HOST`] set when the map is over host memory. Buffers come
//! pre-configured from [`DpaBufArray::set_params`] (buffer `i` is `element_size` bytes at
//! `start_offset + i * element_size` of the map), or zeroed for DPA code to set.

use crate::dpa::{DpaBuf, Process, StepExt};

use super::{DocaError, DpaMmap};

/// Bytes of one `struct doca_dpa_buf`.
pub const DPA_BUF_SIZE: u64 = 32;
/// Bit 32 of `doca_dpa_buf.mmap`: the key is over host memory (`MLX5_DPA_DOCA_MMAP_HOST`).
pub const MLX5_DPA_DOCA_MMAP_HOST: u64 = 1 << 32;
/// Most buffers one array may hold.
pub const MAX_BUF_ARR_ELEMENTS: u32 = 1 << 20;

/// One buffer as DPA code sees it (`doca_dpa_dev_buf_get_addr` / `_len` / `_mmap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DpaBufDesc {
    /// A DPA address for a map over DPA memory, a host address for one over host memory.
    pub addr: u64,
    pub len: u64,
    /// The map's key, with [`MLX5_DPA_DOCA_MMAP_HOST`] for host memory (0: none set).
    pub mmap: u64,
}

impl DpaBufDesc {
    /// The buffer `[addr, addr + len)` of `map` (its range is checked).
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] when the range leaves the map.
    pub fn of(map: &DpaMmap, addr: u64, len: u64) -> Result<DpaBufDesc, DocaError> {
        let (base, size) = map.range();
        let inside = addr >= base && addr.checked_add(len).is_some_and(|end| end <= base + size);
        if !inside {
            return Err(DocaError::InvalidValue(format!(
                "buffer {addr:#x}+{len:#x} outside the map {base:#x}+{size:#x}"
            )));
        }
        Ok(DpaBufDesc {
            addr,
            len,
            mmap: map.dpa_handle(),
        })
    }

    fn to_bytes(self) -> [u8; DPA_BUF_SIZE as usize] {
        let mut b = [0u8; DPA_BUF_SIZE as usize];
        b[0..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.mmap.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> DpaBufDesc {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        DpaBufDesc {
            addr: word(0),
            len: word(8),
            mmap: word(16),
        }
    }
}

/// A buffer array in DPA memory; freed when dropped (DPA code must be done with it).
#[derive(Debug)]
pub struct DpaBufArray {
    process: Process,
    num_elements: u32,
    params: Vec<DpaBufDesc>,
    buf: Option<DpaBuf>,
}

impl DpaBufArray {
    pub(crate) fn create(process: Process, num_elements: u32) -> Result<DpaBufArray, DocaError> {
        if num_elements == 0 || num_elements > MAX_BUF_ARR_ELEMENTS {
            return Err(DocaError::InvalidValue(format!(
                "a buffer array of {num_elements} buffers (1 ..= {MAX_BUF_ARR_ELEMENTS})"
            )));
        }
        Ok(DpaBufArray {
            process,
            num_elements,
            params: Vec::new(),
            buf: None,
        })
    }

    /// `doca_buf_arr_set_params`: buffer `i` is `element_size` bytes at
    /// `start_offset + i * element_size` of `map`.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started; [`DocaError::InvalidValue`] for a zero size
    /// or buffers that leave the map.
    pub fn set_params(
        &mut self,
        map: &DpaMmap,
        element_size: u64,
        start_offset: u64,
    ) -> Result<(), DocaError> {
        if self.buf.is_some() {
            return Err(DocaError::NotPermitted(
                "set_params of a started buffer array".into(),
            ));
        }
        if element_size == 0 {
            return Err(DocaError::InvalidValue("a buffer of 0 bytes".into()));
        }
        let (base, _) = map.range();
        let mut params = Vec::with_capacity(self.num_elements as usize);
        for i in 0..u64::from(self.num_elements) {
            let addr = i
                .checked_mul(element_size)
                .and_then(|o| o.checked_add(start_offset))
                .and_then(|o| o.checked_add(base))
                .ok_or_else(|| DocaError::InvalidValue("buffer offsets overflow".into()))?;
            params.push(DpaBufDesc::of(map, addr, element_size)?);
        }
        self.params = params;
        Ok(())
    }

    /// `doca_buf_arr_start` with a DPA target: the array in DPA memory, pre-configured by
    /// `set_params` or zeroed.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] when already started; allocation or copy failures, naming
    /// the step.
    pub fn start(&mut self) -> Result<(), DocaError> {
        if self.buf.is_some() {
            return Err(DocaError::NotPermitted(
                "start of a started buffer array".into(),
            ));
        }
        let len = DPA_BUF_SIZE * u64::from(self.num_elements);
        let buf = self
            .process
            .alloc(len)
            .step("allocating the buffer array")?;
        const W: &str = "writing the buffer array";
        self.process.memset(buf.daddr(), 0, len as usize).step(W)?;
        if !self.params.is_empty() {
            let bytes: Vec<u8> = self.params.iter().flat_map(|d| d.to_bytes()).collect();
            self.process.copy_to_dev(buf.daddr(), &bytes).step(W)?;
        }
        self.buf = Some(buf);
        Ok(())
    }

    /// `doca_buf_arr_get_dpa_handle`.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before start.
    pub fn dpa_handle(&self) -> Result<u64, DocaError> {
        self.buf
            .as_ref()
            .map(DpaBuf::daddr)
            .ok_or_else(|| DocaError::NotPermitted("handle of an unstarted buffer array".into()))
    }

    /// Its number of buffers.
    pub fn num_elements(&self) -> u32 {
        self.num_elements
    }

    /// Buffer `index` as it is now in DPA memory (DPA code may have changed it).
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] past the end; [`DocaError::NotPermitted`] before start;
    /// a failed copy.
    pub fn buf(&self, index: u32) -> Result<DpaBufDesc, DocaError> {
        if index >= self.num_elements {
            return Err(DocaError::InvalidValue(format!(
                "buffer {index} of an array of {}",
                self.num_elements
            )));
        }
        let base = self.dpa_handle()?;
        let mut b = [0u8; DPA_BUF_SIZE as usize];
        self.process
            .copy_from_dev(base + DPA_BUF_SIZE * u64::from(index), &mut b)
            .step("reading the buffer array")?;
        Ok(DpaBufDesc::from_bytes(&b))
    }
}
