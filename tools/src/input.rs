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

/// The largest list of operations `eu batch` reads: 16 MiB, some 400 000 lines of `eu`
/// operations, more than the 65 535 groups and partitions the registers can number.
pub const MAX_BATCH_FILE: u64 = 16 << 20;
/// The largest PEM private key `cc --sign-key` reads: 1 MiB (an RSA-4096 key is about 3 KiB).
pub const MAX_KEY_FILE: u64 = 1 << 20;

/// A number on the command line, as the tool takes numbers everywhere: decimal or `0x` hex
/// (`_` between digits allowed), within `T`'s range.
pub fn num<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
    let t = s.trim().replace('_', "");
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse::<u64>(),
    }
    .map_err(|_| format!("{s:?} is not a number (decimal or 0x hex)"))?;
    T::try_from(v).map_err(|_| {
        format!(
            "{s} is out of range ({} bits at most)",
            8 * std::mem::size_of::<T>()
        )
    })
}

/// `FILE.sig`: where a detached signature of `FILE` lies (as `mlx5-dpa sign` writes it and
/// `verify`, `elf info` and the demos look for it).
pub fn sig_beside(path: &Path) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".sig");
    std::path::PathBuf::from(p)
}

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

/// Reads standard input to its end, at most `limit` bytes (a pipe has no size to check
/// first).
///
/// # Errors
/// [`InputError::TooLarge`] past the limit (what was read is dropped), or the read's error.
pub fn read_bounded_stdin(limit: u64) -> Result<Vec<u8>, InputError> {
    read_bounded_from(std::io::stdin().lock(), "standard input", limit)
}

/// Reads `r` to its end, at most `limit` bytes; `shown` names it in errors.
fn read_bounded_from(r: impl Read, shown: &str, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Io {
            path: shown.to_string(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: shown.to_string(),
            limit,
        });
    }
    Ok(bytes)
}

/// Reads `path` (`-`: standard input) as UTF-8 text of at most `limit` bytes.
///
/// # Errors
/// As [`read_bounded`]; text that is not UTF-8 is an [`InputError::Io`] of kind
/// `InvalidData`.
pub fn read_text(path: &Path, limit: u64) -> Result<String, InputError> {
    let shown = path.display().to_string();
    let bytes = if shown == "-" {
        read_bounded_stdin(limit)?
    } else {
        read_bounded(path, limit)?
    };
    String::from_utf8(bytes).map_err(|e| InputError::Io {
        path: shown,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_stream_is_read_up_to_its_limit() {
        let src = [1u8; 64];
        assert_eq!(read_bounded_from(&src[..], "s", 64).unwrap().len(), 64);
        // An endless stream stops one byte past the limit.
        match read_bounded_from(std::io::repeat(0), "zeros", 1000) {
            Err(InputError::TooLarge { path, limit }) => {
                assert_eq!((path.as_str(), limit), ("zeros", 1000))
            }
            other => panic!("{other:?}"),
        }
    }

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
