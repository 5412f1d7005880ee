//! Files the tool reads: regular files only, and at most a stated size, so that `/dev/zero`,
//! a FIFO or a huge file is refused before it is read into memory.

use std::io::Read;
use std::path::Path;

/// The largest ELF file `elf info` and `vm run` read: 256 MiB, the most memory one DPA
/// process has on a BlueField-3 (`dpa_mem_block_size << log_max_num_dpa_mem_blocks`), and far
/// more than any host ELF carrying DPA applications needs.
pub const MAX_ELF_FILE: u64 = 256 << 20;
/// The largest `@FILE` of hex `cmd` and `prm decode` read: 1 MiB, room for the largest
/// mailbox ([`mlx5_dpa::devx::MAX_MAILBOX_LEN`] bytes) written as spaced hex.
pub const MAX_HEX_FILE: u64 = 1 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a regular file")]
    NotRegular { path: String },
    #[error("{path} has more than {limit} bytes, the most this command reads")]
    TooLarge { path: String, limit: u64 },
}

/// Reads all of `path`, a regular file of at most `limit` bytes.
///
/// # Errors
/// [`InputError`], naming the path.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let shown = || path.display().to_string();
    let io = |source| InputError::Io {
        path: shown(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(InputError::NotRegular { path: shown() });
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: shown(),
            limit,
        });
    }
    // The file may grow while it is read: never take more than the limit.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: shown(),
            limit,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_large_files_are_refused() {
        assert!(matches!(
            read_bounded(Path::new("/dev/zero"), MAX_ELF_FILE),
            Err(InputError::NotRegular { .. })
        ));
        assert!(matches!(
            read_bounded(Path::new("/"), MAX_ELF_FILE),
            Err(InputError::NotRegular { .. })
        ));
        let dir = std::env::temp_dir().join(format!("mlx5-dpa-input-{}", std::process::id()));
        std::fs::write(&dir, [7u8; 100]).unwrap();
        assert_eq!(read_bounded(&dir, 100).unwrap(), [7u8; 100]);
        match read_bounded(&dir, 99) {
            Err(e @ InputError::TooLarge { .. }) => {
                assert!(e.to_string().contains(&dir.display().to_string()))
            }
            other => panic!("{other:?}"),
        }
        std::fs::remove_file(&dir).unwrap();
        assert!(matches!(read_bounded(&dir, 99), Err(InputError::Io { .. })));
    }
}
