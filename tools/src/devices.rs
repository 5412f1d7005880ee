//! `mlx5-dpa devices`: the RDMA devices the kernel lists, and the model.

use super::*;

pub(crate) fn devices(as_json: bool) -> Result<(), ToolError> {
    let list = devx::list_devices();
    if as_json {
        /// One device of `devices --json`.
        #[derive(serde::Serialize)]
        struct Device<'a> {
            name: &'a str,
            uverbs: String,
            fw_ver: &'a Option<String>,
            pci: &'a Option<String>,
        }
        /// `devices --json`'s object.
        #[derive(serde::Serialize)]
        struct Devices<'a> {
            devices: Vec<Device<'a>>,
            model_profiles: &'a [&'a str],
        }
        let devices = list
            .iter()
            .map(|d| Device {
                name: &d.name,
                uverbs: d.uverbs_path.display().to_string(),
                fw_ver: &d.fw_ver,
                pci: &d.pci,
            })
            .collect();
        let out = Devices {
            devices,
            model_profiles: &Profile::NAMES,
        };
        println!("{}", serde_json::to_string(&out).unwrap_or_default());
        return Ok(());
    }
    if list.is_empty() {
        println!(
            "No mlx5 devices found (looked in {}).",
            devx::discovery::searched()
        );
        println!(
            "The device model (mlx5-sim) is available: commands use it when no hardware is \
             found, or ask for it with --sim[={}].",
            profile_choices()
        );
        return Ok(());
    }
    println!("{:<12} {:<26} {:<16} PCI", "NAME", "UVERBS", "FIRMWARE");
    for d in list {
        println!(
            "{:<12} {:<26} {:<16} {}",
            d.name,
            d.uverbs_path.display(),
            d.fw_ver.as_deref().unwrap_or("-"),
            d.pci.as_deref().unwrap_or("-")
        );
    }
    println!(
        "(the device model mlx5-sim is available too: --sim[={}])",
        profile_choices()
    );
    Ok(())
}
