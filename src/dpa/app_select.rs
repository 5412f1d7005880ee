//! FlexIO's application selection (`flexio_app_get`): the copy of an application built for
//! the device's hardware model, or for the newest older one, or for exactly a model asked for.
//! The models, and what is public about them and their packaging, are in [`super::hw_model`].

use std::sync::Arc;

use thiserror::Error;

use crate::devx::Devx;

use super::app::{app_names, App, AppError};
use super::caps::DpaCaps;
use super::hw_model::HwModel;
use super::DpaError;

/// The model of a device whose DPA capabilities are `caps` ([`HwModel::of_platform_version`]).
///
/// # Errors
/// [`SelectError::UnknownPlatform`] for a `dpa_platform_version` not known here.
pub fn device_model(caps: &DpaCaps) -> Result<HwModel, SelectError> {
    HwModel::of_platform_version(caps.platform_version).ok_or(SelectError::UnknownPlatform {
        platform_version: caps.platform_version,
    })
}

/// Which model's copy to take (FlexIO's `hw_model_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HwModelSel {
    /// `FLEXIO_HW_MODEL_DEF`: the device's model, or the newest older one that has a copy.
    #[default]
    Default,
    /// Only a copy built for exactly this model.
    Exact(HwModel),
}

/// What `flexio_app_get` matches (`struct flexio_app_select_attr`, less the device context,
/// which [`crate::dpa::app_get`] takes as the device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSelectAttr {
    pub app_name: String,
    pub hw_model: HwModelSel,
}

impl AppSelectAttr {
    /// Application `app_name`, for the device's model (`FLEXIO_HW_MODEL_DEF`).
    pub fn new(app_name: &str) -> AppSelectAttr {
        AppSelectAttr {
            app_name: app_name.to_string(),
            hw_model: HwModelSel::Default,
        }
    }

    /// Application `app_name`, built for exactly `model`.
    pub fn exact(app_name: &str, model: HwModel) -> AppSelectAttr {
        AppSelectAttr {
            app_name: app_name.to_string(),
            hw_model: HwModelSel::Exact(model),
        }
    }
}

/// Why no copy was selected.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SelectError {
    #[error(transparent)]
    App(#[from] AppError),
    /// The device's DPA capabilities could not be read (or it has no DPA).
    #[error("querying the device's DPA hardware model: {0}")]
    Query(#[source] Box<DpaError>),
    #[error(
        "DPA application {app:?} has no copy built for {requested} (it has: {})",
        models(.available)
    )]
    NoExactModel {
        app: String,
        requested: HwModel,
        available: Vec<HwModel>,
    },
    #[error(
        "DPA application {app:?} has no copy for the device's model ({device}) or an older one (it has: {})",
        models(.available)
    )]
    NoCompatibleModel {
        app: String,
        device: HwModel,
        available: Vec<HwModel>,
    },
    #[error(
        "the device reports dpa_platform_version {platform_version}, which names no known DPA hardware model (only 1, BlueField-3, is known): request a model explicitly"
    )]
    UnknownPlatform { platform_version: u16 },
}

fn models(list: &[HwModel]) -> String {
    list.iter().map(|m| m.mcpu()).collect::<Vec<_>>().join(", ")
}

/// Picks the copy of `attr.app_name` that `flexio_app_get` would for a device of model `device`:
/// with [`HwModelSel::Default`] the copy for `device`, else the one for the newest model older
/// than `device`; with [`HwModelSel::Exact`] only the copy for that model (whatever `device` is,
/// as FlexIO documents).
///
/// # Errors
/// [`AppError::NoSuchApp`] (in [`SelectError::App`]) when no copy has that name;
/// [`SelectError::NoExactModel`] / [`SelectError::NoCompatibleModel`] naming the copies there are.
pub fn select(apps: Vec<App>, attr: &AppSelectAttr, device: HwModel) -> Result<App, SelectError> {
    let names = app_names(&apps);
    let mut copies: Vec<App> = apps
        .into_iter()
        .filter(|a| a.name() == attr.app_name)
        .collect();
    if copies.is_empty() {
        return Err(AppError::NoSuchApp {
            name: attr.app_name.clone(),
            available: names,
        }
        .into());
    }
    let mut available: Vec<HwModel> = copies.iter().map(App::hw_model).collect();
    available.sort();
    let pick = match attr.hw_model {
        HwModelSel::Exact(m) => copies.iter().position(|a| a.hw_model() == m),
        HwModelSel::Default => copies
            .iter()
            .enumerate()
            .filter(|(_, a)| a.hw_model() <= device)
            .max_by_key(|(_, a)| a.hw_model())
            .map(|(i, _)| i),
    };
    match (pick, attr.hw_model) {
        (Some(i), _) => Ok(copies.swap_remove(i)),
        (None, HwModelSel::Exact(requested)) => Err(SelectError::NoExactModel {
            app: attr.app_name.clone(),
            requested,
            available,
        }),
        (None, HwModelSel::Default) => Err(SelectError::NoCompatibleModel {
            app: attr.app_name.clone(),
            device,
            available,
        }),
    }
}

/// FlexIO's `flexio_app_get`: the copy of `attr.app_name` among `apps` for device `dev`. With
/// [`HwModelSel::Default`] the device's model is read from its DPA capability page
/// ([`device_model`]); with [`HwModelSel::Exact`] the device is not asked.
///
/// # Errors
/// [`SelectError::Query`] when the capabilities cannot be read; else as [`select`].
pub fn app_get(
    dev: &Arc<dyn Devx>,
    apps: Vec<App>,
    attr: &AppSelectAttr,
) -> Result<App, SelectError> {
    let device = match attr.hw_model {
        HwModelSel::Exact(m) => m,
        HwModelSel::Default => {
            let caps = DpaCaps::query(dev).map_err(|e| SelectError::Query(Box::new(e)))?;
            device_model(&caps)?
        }
    };
    select(apps, attr, device)
}
