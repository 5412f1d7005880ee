//! Finding mlx5 devices: `/sys/class/infiniband` (RDMA devices and their driver) and
//! `/sys/class/infiniband_verbs` (the `uverbsN` character devices and which RDMA device each
//! serves). Pure file reads; a missing sysfs simply yields no devices.

use std::fs;
use std::path::{Path, PathBuf};

/// Where devices are looked for, for messages.
pub const SYSFS_VERBS: &str = "/sys/class/infiniband_verbs";
pub const SYSFS_IB: &str = "/sys/class/infiniband";

/// One mlx5 device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// RDMA device name (`mlx5_0`).
    pub name: String,
    /// The character device to open (`/dev/infiniband/uverbs0`).
    pub uverbs_path: PathBuf,
    /// Firmware version (`fw_ver`), when sysfs has it.
    pub fw_ver: Option<String>,
    /// PCI address of the function, when sysfs links it.
    pub pci: Option<String>,
    /// `node_guid`, when present.
    pub node_guid: Option<String>,
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Lists mlx5 devices under the given sysfs roots (tests point these at a fake tree).
pub fn list_devices_in(verbs_root: &Path, ib_root: &Path, dev_root: &Path) -> Vec<DeviceInfo> {
    let Ok(entries) = fs::read_dir(verbs_root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let uverbs = e.file_name().to_string_lossy().to_string();
        if !uverbs.starts_with("uverbs") {
            continue;
        }
        let Some(name) = read_trim(&e.path().join("ibdev")) else {
            continue;
        };
        let ib = ib_root.join(&name);
        // Only mlx5 devices: the driver link of the RDMA device's parent, or the name.
        let driver = fs::read_link(ib.join("device/driver"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string()));
        let is_mlx5 = driver
            .as_deref()
            .map_or(name.starts_with("mlx5"), |d| d.starts_with("mlx5"));
        if !is_mlx5 {
            continue;
        }
        out.push(DeviceInfo {
            uverbs_path: dev_root.join(&uverbs),
            fw_ver: read_trim(&ib.join("fw_ver")),
            pci: fs::read_link(ib.join("device"))
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string())),
            node_guid: read_trim(&ib.join("node_guid")),
            name,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Lists the mlx5 devices of this machine.
pub fn list_devices() -> Vec<DeviceInfo> {
    list_devices_in(
        Path::new(SYSFS_VERBS),
        Path::new(SYSFS_IB),
        Path::new("/dev/infiniband"),
    )
}

/// Describes where [`list_devices`] looked.
pub fn searched() -> String {
    format!("{SYSFS_VERBS} (uverbs devices) and {SYSFS_IB} (mlx5 drivers)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_mlx5_devices_in_a_fake_sysfs() {
        let root = std::env::temp_dir().join(format!("mlx5-dpa-sysfs-{}", std::process::id()));
        let verbs = root.join("infiniband_verbs");
        let ib = root.join("infiniband");
        for (uv, dev, fw) in [
            ("uverbs1", "mlx5_1", "32.40.1000"),
            ("uverbs0", "mlx5_0", "32.40.1000"),
            ("uverbs2", "rxe0", ""),
        ] {
            fs::create_dir_all(verbs.join(uv)).unwrap();
            fs::write(verbs.join(uv).join("ibdev"), format!("{dev}\n")).unwrap();
            fs::create_dir_all(ib.join(dev)).unwrap();
            fs::write(ib.join(dev).join("fw_ver"), fw).unwrap();
        }
        let found = list_devices_in(&verbs, &ib, Path::new("/dev/infiniband"));
        let _ = fs::remove_dir_all(&root);
        let names: Vec<_> = found.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["mlx5_0", "mlx5_1"]);
        assert_eq!(found[0].uverbs_path, Path::new("/dev/infiniband/uverbs0"));
        assert_eq!(found[0].fw_ver.as_deref(), Some("32.40.1000"));
    }

    #[test]
    fn missing_sysfs_means_no_devices() {
        let none = list_devices_in(
            Path::new("/nonexistent/a"),
            Path::new("/nonexistent/b"),
            Path::new("/dev"),
        );
        assert!(none.is_empty());
    }
}
