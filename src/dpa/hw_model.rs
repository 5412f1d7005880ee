//! DPA hardware models (the models an application is built for; [`super::app_select`] picks
//! a copy by model as FlexIO's `flexio_app_get` does).
//!
//! The FlexIO SDK guide ("Flex IO SDK Multi-hardware Model", `../shared/seeds`) describes one
//! DPA application built for several hardware models: DPACC makes a copy per model, and the
//! host picks one with `flexio_app_get(struct flexio_app_select_attr {app_name, hw_model_id,
//! ibv_ctx})`. With `hw_model_id = FLEXIO_HW_MODEL_DEF` the device is asked for its model and
//! the copy built for that model is taken, or, when there is none, the copy for the newest
//! older model (newer models run older code); with an explicit model only a copy built for
//! exactly that model is taken.
//!
//! What is public and what is not:
//! - The models and their order: DPACC's `-mcpu` targets `nv-dpa-bf3`, `nv-dpa-cx8` and
//!   `nv-dpa-cx9`, and device headers compare them with `__NV_DPA >= __NV_DPA_CX8` (DOCA PCC
//!   device headers): BlueField-3, then ConnectX-8, then ConnectX-9. These are [`HwModel`].
//! - The numeric values of FlexIO's `hw_model_id` enum and of the `__NV_DPA_*` macros are not
//!   public. [`HwModel::nv_dpa`] gives provisional values that keep the documented order.
//! - How DPACC labels the copies inside a host program is not public either. This project's
//!   convention (provisional): the copy for model M of application A is section
//!   `.dpa_bin_A@nv-dpa-M` ([`crate::dpa::app::MODEL_SEPARATOR`]); `.dpa_bin_A` without a label
//!   is a build for BlueField-3, which is what DPACC 24.01 (no `--cpu`) and NVIDIA's snap ELFs
//!   are. `mlx5-dpa cc --cpu bf3,cx8 --package-into` writes this layout.
//! - Which `dpa_platform_version` a ConnectX-8 reports is not public: only version 1 has been
//!   seen (the BlueField-3 profile of the model), so [`HwModel::of_platform_version`] knows 1
//!   and nothing else, and an unknown version is a typed error, not a guess.

use std::fmt;

use thiserror::Error;

/// A DPA hardware model, in generation order (`Bf3 < Cx8 < Cx9`): a newer model runs code built
/// for an older one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HwModel {
    /// BlueField-3's DPA (`-mcpu=nv-dpa-bf3`).
    Bf3,
    /// ConnectX-8's DPA (`-mcpu=nv-dpa-cx8`).
    Cx8,
    /// ConnectX-9's DPA (`-mcpu=nv-dpa-cx9`).
    Cx9,
}

/// A model name no [`HwModel`] has.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown DPA hardware model {0:?} (known: bf3, cx8, cx9, or nv-dpa-bf3 ...)")]
pub struct UnknownHwModel(pub String);

impl HwModel {
    /// Every model, oldest first.
    pub const ALL: [HwModel; 3] = [HwModel::Bf3, HwModel::Cx8, HwModel::Cx9];

    /// The short name (`bf3`), as `--cpu` of FlexIO's sample build takes it.
    pub fn short_name(self) -> &'static str {
        match self {
            HwModel::Bf3 => "bf3",
            HwModel::Cx8 => "cx8",
            HwModel::Cx9 => "cx9",
        }
    }

    /// DPACC's `-mcpu` target (`nv-dpa-bf3`).
    pub fn mcpu(self) -> &'static str {
        match self {
            HwModel::Bf3 => "nv-dpa-bf3",
            HwModel::Cx8 => "nv-dpa-cx8",
            HwModel::Cx9 => "nv-dpa-cx9",
        }
    }

    /// The device compiler's `__NV_DPA_<MODEL>` macro name (`__NV_DPA_BF3`).
    pub fn nv_dpa_macro(self) -> &'static str {
        match self {
            HwModel::Bf3 => "__NV_DPA_BF3",
            HwModel::Cx8 => "__NV_DPA_CX8",
            HwModel::Cx9 => "__NV_DPA_CX9",
        }
    }

    /// The value of that macro. Provisional: DPACC's values are not public; these keep the
    /// order device headers rely on (`__NV_DPA >= __NV_DPA_CX8`).
    pub fn nv_dpa(self) -> u32 {
        match self {
            HwModel::Bf3 => 1,
            HwModel::Cx8 => 2,
            HwModel::Cx9 => 3,
        }
    }

    /// A model by its short name or `-mcpu` target, case-insensitively.
    ///
    /// # Errors
    /// [`UnknownHwModel`] for any other name.
    pub fn from_name(name: &str) -> Result<HwModel, UnknownHwModel> {
        let lower = name.to_ascii_lowercase();
        let short = lower.strip_prefix("nv-dpa-").unwrap_or(&lower);
        HwModel::ALL
            .into_iter()
            .find(|m| m.short_name() == short)
            .ok_or_else(|| UnknownHwModel(name.to_string()))
    }

    /// The model of a device reporting `dpa_platform_version` `version` (DPA capability page).
    /// Only 1 (BlueField-3) is known; see the module documentation.
    pub fn of_platform_version(version: u16) -> Option<HwModel> {
        match version {
            1 => Some(HwModel::Bf3),
            _ => None,
        }
    }
}

impl fmt::Display for HwModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mcpu())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_is_generational() {
        for m in HwModel::ALL {
            assert_eq!(HwModel::from_name(m.short_name()), Ok(m));
            assert_eq!(HwModel::from_name(m.mcpu()), Ok(m));
            assert_eq!(HwModel::from_name(&m.mcpu().to_uppercase()), Ok(m));
        }
        assert!(HwModel::Bf3 < HwModel::Cx8 && HwModel::Cx8 < HwModel::Cx9);
        let values: Vec<u32> = HwModel::ALL.iter().map(|m| m.nv_dpa()).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
        for bad in ["", "cx7", "nv-dpa-", "bf3x", "nv-dpa-cx10"] {
            assert_eq!(
                HwModel::from_name(bad),
                Err(UnknownHwModel(bad.to_string()))
            );
        }
        assert_eq!(HwModel::of_platform_version(1), Some(HwModel::Bf3));
        assert_eq!(HwModel::of_platform_version(0), None);
        assert_eq!(HwModel::of_platform_version(2), None);
    }
}
