//! The sysfs tree of the served device: what Linux's RDMA core and `mlx5_ib` show under
//! `/sys/class/infiniband` and `/sys/class/infiniband_verbs` for a BlueField-3 port (Linux
//! `drivers/infiniband/core/sysfs.c`, `uverbs_main.c`), and the PCI function behind it.
//!
//! libibverbs finds devices here (`libibverbs/init.c`, `sysfs.c`: `infiniband_verbs/uverbsN/
//! {ibdev,dev,abi_version}`, the device's `node_type`, `device/modalias` that the mlx5 provider
//! matches); rdma-core's tests and DPDK read the same files. The runner writes this tree into a
//! private mount namespace ([`crate::ns`]).

use std::fs;
use std::io;
use std::net::Ipv4Addr;
use std::path::Path;

use crate::config::{self, Config};
use crate::device;

/// The PCI address the served function has.
pub const PCI_SLOT: &str = "0000:08:00.0";
/// Where, inside the class tree, the PCI function's directory lives (its `device` link target).
pub const PCI_DIR: &str = "mlx5_sim_pci";

fn put(p: &Path, v: impl AsRef<str>) -> io::Result<()> {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d)?;
    }
    fs::write(p, format!("{}\n", v.as_ref()))
}

fn guid_text(mac: [u8; 6]) -> String {
    let e = device::eui64(mac);
    format!(
        "{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}",
        e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]
    )
}

fn gid_text(g: &[u8; 16]) -> String {
    g.chunks(2)
        .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
        .collect::<Vec<_>>()
        .join(":")
}

/// Writes the tree under `class` (what becomes `/sys/class`): `infiniband/mlx5_0`,
/// `infiniband_verbs/uverbs0` (whose `dev` is `major:minor`) and the PCI function.
///
/// # Errors
/// File system errors.
pub fn write_tree(class: &Path, cfg: &Config, major: u32, minor: u32) -> io::Result<()> {
    let mac = cfg.mac();
    let ip: Ipv4Addr = cfg.ip;
    let name = config::DEVICE_NAME;
    // The PCI function (`lspci -s 08:00.0`: 15b3:a2dc, Ethernet controller).
    let pci = class.join(PCI_DIR).join(PCI_SLOT);
    let (v, d) = (0x15b3u32, device::VENDOR_PART_ID);
    put(
        &pci.join("modalias"),
        format!("pci:v{v:08X}d{d:08X}sv{v:08X}sd00000051bc02sc00i00"),
    )?;
    put(&pci.join("vendor"), format!("{v:#06x}"))?;
    put(&pci.join("device"), format!("{d:#06x}"))?;
    put(&pci.join("subsystem_vendor"), format!("{v:#06x}"))?;
    put(&pci.join("subsystem_device"), "0x0051")?;
    put(&pci.join("class"), "0x020000")?;
    put(&pci.join("numa_node"), "-1")?;
    // `resource`: one line per region (start, end, flags), as Linux's `resource_show`
    // (drivers/pci/pci-sysfs.c) writes them: BAR 0, the 32 MiB of a ConnectX's initialization
    // segment and UARs (64-bit prefetchable memory, IORESOURCE_MEM | PREFETCH | MEM_64 |
    // SIZEALIGN), then the other BARs, the ROM and the SR-IOV BARs unused. DPDK's PCI scan
    // reads it (`pci_parse_sysfs_resource`) and skips a device without it. Nothing maps it:
    // the model's UARs are reached through the uverbs mmap, as mlx5 drivers do.
    let bar0 = 0x3800_0000_0000u64;
    let mut resource = format!(
        "{bar0:#018x} {:#018x} {:#018x}",
        bar0 + (32 << 20) - 1,
        0x0014_220cu64
    );
    for _ in 1..13 {
        resource.push_str("\n0x0000000000000000 0x0000000000000000 0x0000000000000000");
    }
    put(&pci.join("resource"), resource)?;
    put(
        &pci.join("uevent"),
        format!(
            "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_ID={v:04X}:{d:04X}\nPCI_SUBSYS_ID={v:04X}:0051\nPCI_SLOT_NAME={PCI_SLOT}\nMODALIAS=pci:v{v:08X}d{d:08X}sv{v:08X}sd00000051bc02sc00i00"
        ),
    )?;
    // The port's network interface, as `mlx5_core` registers it under the PCI function
    // (DPDK's mlx5 driver finds it here): the class entry the real kernel made for it.
    if let Some(n) = &cfg.netdev {
        fs::create_dir_all(pci.join("net"))?;
        symlink(&format!("../../../net/{n}"), &pci.join("net").join(n))?;
    }
    fs::create_dir_all(class.join(PCI_DIR).join("drivers/mlx5_core"))?;
    symlink("../../drivers/mlx5_core", &pci.join("driver"))?;

    // /sys/class/infiniband/mlx5_0
    let ib = class.join("infiniband").join(name);
    fs::create_dir_all(&ib)?;
    symlink(&format!("../../{PCI_DIR}/{PCI_SLOT}"), &ib.join("device"))?;
    put(&ib.join("node_type"), "1: CA")?;
    put(&ib.join("node_guid"), guid_text(mac))?;
    put(&ib.join("sys_image_guid"), guid_text(mac))?;
    let (a, b, c) = device::FW_VER;
    put(&ib.join("fw_ver"), format!("{a}.{b}.{c}"))?;
    put(&ib.join("hca_type"), format!("MT{d}"))?;
    put(&ib.join("hw_rev"), "0x0")?;
    put(&ib.join("board_id"), "MT_0000000884")?;
    put(&ib.join("node_desc"), format!("mlx5-sim {name}"))?;
    put(&ib.join("uevent"), format!("NAME={name}"))?;
    let port = ib.join("ports/1");
    put(&port.join("state"), "4: ACTIVE")?;
    put(&port.join("phys_state"), "5: LinkUp")?;
    put(&port.join("link_layer"), "Ethernet")?;
    put(&port.join("rate"), "200 Gb/sec (4X HDR)")?;
    put(&port.join("lid"), "0x0")?;
    put(&port.join("lid_mask_count"), "0")?;
    put(&port.join("sm_lid"), "0x0")?;
    put(&port.join("sm_sl"), "0")?;
    put(
        &port.join("cap_mask"),
        format!("{:#010x}", device::PORT_CAP_FLAGS),
    )?;
    put(&port.join("pkeys/0"), "0xffff")?;
    for (i, g) in device::gids(ip, mac).iter().enumerate() {
        put(&port.join(format!("gids/{i}")), gid_text(g))?;
        put(&port.join(format!("gid_attrs/types/{i}")), "RoCE v2")?;
    }

    // /sys/class/infiniband_verbs
    let verbs = class.join("infiniband_verbs");
    put(&verbs.join("abi_version"), "6")?;
    let uv = verbs.join("uverbs0");
    put(&uv.join("ibdev"), name)?;
    put(&uv.join("abi_version"), "1")?;
    put(&uv.join("dev"), format!("{major}:{minor}"))?;
    symlink(&format!("../../{PCI_DIR}/{PCI_SLOT}"), &uv.join("device"))?;
    Ok(())
}

fn symlink(target: &str, at: &Path) -> io::Result<()> {
    match std::os::unix::fs::symlink(target, at) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_libibverbs_reads() {
        let root = std::env::temp_dir().join(format!("mlx5-sim-sysfs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let cfg = Config {
            ip: Ipv4Addr::new(10, 0, 0, 7),
            ..Config::default()
        };
        write_tree(&root, &cfg, 231, 192).unwrap();
        let read = |p: &str| fs::read_to_string(root.join(p)).unwrap();
        assert_eq!(read("infiniband_verbs/uverbs0/ibdev"), "mlx5_0\n");
        assert_eq!(read("infiniband_verbs/uverbs0/dev"), "231:192\n");
        assert_eq!(read("infiniband/mlx5_0/node_type"), "1: CA\n");
        // The modalias the mlx5 provider matches: vendor 15b3, BlueField-3 a2dc.
        assert!(read("infiniband/mlx5_0/device/modalias").starts_with("pci:v000015B3d0000A2DC"));
        assert_eq!(
            read("infiniband/mlx5_0/ports/1/gids/1"),
            "0000:0000:0000:0000:0000:ffff:0a00:0007\n"
        );
        assert_eq!(read("infiniband/mlx5_0/node_guid"), "0000:0aff:fe00:0007\n");
        // DPDK's PCI scan: six BAR lines at least, BAR 0 a 32 MiB 64-bit memory region.
        let resource = read("infiniband/mlx5_0/device/resource");
        let lines: Vec<Vec<u64>> = resource
            .lines()
            .map(|l| {
                l.split(' ')
                    .map(|f| u64::from_str_radix(f.trim_start_matches("0x"), 16).unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(lines.len(), 13);
        assert!(lines.iter().all(|l| l.len() == 3));
        assert_eq!(lines[0][1] - lines[0][0] + 1, 32 << 20);
        assert_eq!(lines[0][2] & 0x200, 0x200, "IORESOURCE_MEM");
        assert!(lines[1..].iter().all(|l| l == &[0, 0, 0]));
        // The driver's own discovery finds it as an mlx5 device at that PCI address.
        let found = mlx5_dpa::devx::discovery::list_devices_in(
            &root.join("infiniband_verbs"),
            &root.join("infiniband"),
            Path::new("/dev/infiniband"),
        );
        let _ = fs::remove_dir_all(&root);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].pci.as_deref(), Some(PCI_SLOT));
        assert_eq!(found[0].fw_ver.as_deref(), Some("32.41.1000"));
    }
}
