//! FlexIO's version API on the host (`flexio_version_set` semantics), in a test binary of its
//! own: the version is process-wide, set once.

use mlx5_dpa::dpa::version::{
    flexio_ver, version, version_set, VersionError, CURRENT_VERSION, LAST_SUPPORTED_VERSION,
};

#[test]
fn the_version_is_set_once_within_the_supported_range() {
    // The encoding orders versions as (year, month).
    assert!(flexio_ver(24, 4, 0) > flexio_ver(24, 1, 0));
    assert!(flexio_ver(25, 1, 0) > flexio_ver(24, 10, 0));
    assert_eq!(version(), None);
    assert_eq!(
        version_set(flexio_ver(23, 10, 0)),
        Err(VersionError::TooOld(flexio_ver(23, 10, 0)))
    );
    assert_eq!(
        version_set(flexio_ver(99, 1, 0)),
        Err(VersionError::TooNew(flexio_ver(99, 1, 0)))
    );
    // Refusals set nothing.
    assert_eq!(version(), None);
    assert!(
        LAST_SUPPORTED_VERSION <= flexio_ver(24, 4, 0) && flexio_ver(24, 4, 0) <= CURRENT_VERSION
    );
    version_set(flexio_ver(24, 4, 0)).unwrap();
    version_set(flexio_ver(24, 4, 0)).unwrap();
    assert_eq!(version(), Some(flexio_ver(24, 4, 0)));
    assert_eq!(
        version_set(CURRENT_VERSION),
        Err(VersionError::AlreadySet {
            set: flexio_ver(24, 4, 0),
            wanted: CURRENT_VERSION
        })
    );
}
