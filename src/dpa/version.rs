//! The host half of FlexIO's version API (seed `dpa-development-flexio-sdk.txt`, "Version API
//! and Backward Compatibility"): `FLEXIO_VER`, `flexio_version_set`.
//!
//! A program may state once, before anything else, which API version it was written for;
//! [`version_set`] refuses a version older than [`LAST_SUPPORTED_VERSION`], newer than
//! [`CURRENT_VERSION`], or different from one already set. Versions are encoded as the device
//! headers encode them (`fw-blobs/include/libflexio-dev/flexio_dev_ver.h`: major << 32 |
//! minor << 16 | sub-minor), so a value compares the same on both sides.

use std::sync::OnceLock;

/// A version: major (year), minor (month), sub-minor (always 0). FlexIO's `FLEXIO_VER`.
pub const fn flexio_ver(major: u16, minor: u16, subminor: u16) -> u64 {
    ((major as u64) << 32) | ((minor as u64) << 16) | subminor as u64
}

/// The newest API version this crate provides (`FLEXIO_CURRENT_VERSION`).
pub const CURRENT_VERSION: u64 = flexio_ver(24, 10, 0);
/// The oldest one it still supports (`FLEXIO_LAST_SUPPORTED_VERSION`).
pub const LAST_SUPPORTED_VERSION: u64 = flexio_ver(24, 1, 0);

static SET: OnceLock<u64> = OnceLock::new();

/// Why [`version_set`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionError {
    #[error(
        "FlexIO version {0:#x} is older than the oldest supported, {LAST_SUPPORTED_VERSION:#x}"
    )]
    TooOld(u64),
    #[error("FlexIO version {0:#x} is newer than this crate's, {CURRENT_VERSION:#x}")]
    TooNew(u64),
    #[error("FlexIO version {wanted:#x} asked after {set:#x} was set")]
    AlreadySet { set: u64, wanted: u64 },
}

/// FlexIO's `flexio_version_set`: the API version this program works with, stated once. Setting
/// the same version again is accepted.
///
/// # Errors
/// A version outside [`LAST_SUPPORTED_VERSION`] ..= [`CURRENT_VERSION`], or another version
/// than the one already set.
pub fn version_set(version: u64) -> Result<(), VersionError> {
    if version < LAST_SUPPORTED_VERSION {
        return Err(VersionError::TooOld(version));
    }
    if version > CURRENT_VERSION {
        return Err(VersionError::TooNew(version));
    }
    let set = *SET.get_or_init(|| version);
    if set != version {
        return Err(VersionError::AlreadySet {
            set,
            wanted: version,
        });
    }
    Ok(())
}

/// The version set with [`version_set`], if any.
pub fn version() -> Option<u64> {
    SET.get().copied()
}
