//! Application selection by DPA hardware model (`flexio_app_get`, FlexIO SDK guide "Multi-hardware
//! Model"; `mlx5_dpa::dpa::hw_model`), on `tests/data/dpa/host_models.elf` (built by
//! `make_models_elf.sh` beside it with `mlx5-dpa cc --cpu`): application `which` has copies for
//! BlueField-3 and ConnectX-8, `newest` one for ConnectX-9 only, `legacy` one unlabelled copy.
//! Each copy's `which_model` answers the model it was compiled for (3, 8 or 9), so running the
//! selected copy on the model shows which one was taken.

use crate::dpa_common;
use crate::elf_edit;

use std::path::PathBuf;

use dpa_common::model;
use elf_edit::rename;
use mlx5_dpa::dpa::app::{App, AppError};
use mlx5_dpa::dpa::app_select::{select, SelectError};
use mlx5_dpa::dpa::{app_get, AppSelectAttr, DpaError, HwModel, Process, ProcessAttr};

fn fixture() -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dpa/host_models.elf"))
        .unwrap()
}

fn apps() -> Vec<App> {
    App::all_in_host_elf(&fixture()).unwrap()
}

/// Runs the selected copy on the model and returns what it says it was built for.
fn built_for(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>, app: &App) -> Result<u64, DpaError> {
    let p = Process::create(ctx, app.image(), &ProcessAttr::default())?;
    p.call("which_model", &[])
}

#[test]
fn the_host_program_lists_every_copy_with_its_model() {
    let got: Vec<(String, HwModel, Option<HwModel>)> = apps()
        .iter()
        .map(|a| (a.name().to_string(), a.hw_model(), a.hw_model_label()))
        .collect();
    assert_eq!(
        got,
        [
            ("which".to_string(), HwModel::Bf3, Some(HwModel::Bf3)),
            ("which".to_string(), HwModel::Cx8, Some(HwModel::Cx8)),
            ("newest".to_string(), HwModel::Cx9, Some(HwModel::Cx9)),
            ("legacy".to_string(), HwModel::Bf3, None),
        ]
    );
    assert_eq!(
        mlx5_dpa::dpa::app::app_names(&apps()),
        ["which", "newest", "legacy"]
    );
}

#[test]
fn default_selection_takes_the_devices_model_and_the_copy_runs() -> Result<(), DpaError> {
    let (_d, ctx) = model("bf3");
    // FLEXIO_HW_MODEL_DEF on the model's BlueField-3 (dpa_platform_version 1).
    let which = app_get(&ctx, apps(), &AppSelectAttr::new("which")).unwrap();
    assert_eq!(which.hw_model(), HwModel::Bf3);
    assert_eq!(built_for(&ctx, &which)?, 3);
    let legacy = app_get(&ctx, apps(), &AppSelectAttr::new("legacy")).unwrap();
    assert_eq!(legacy.hw_model_label(), None);
    assert_eq!(built_for(&ctx, &legacy)?, 3);
    // An exact request takes that copy and no other, whatever the device is.
    let cx8 = app_get(&ctx, apps(), &AppSelectAttr::exact("which", HwModel::Cx8)).unwrap();
    assert_eq!(cx8.hw_model(), HwModel::Cx8);
    assert_eq!(built_for(&ctx, &cx8)?, 8);
    // A program built only for a newer model is not taken for a BlueField-3.
    match app_get(&ctx, apps(), &AppSelectAttr::new("newest")) {
        Err(SelectError::NoCompatibleModel {
            app,
            device: HwModel::Bf3,
            available,
        }) => {
            assert_eq!(app, "newest");
            assert_eq!(available, [HwModel::Cx9]);
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

#[test]
fn selection_follows_flexios_rules_for_every_model() {
    let take = |name: &str, device| select(apps(), &AppSelectAttr::new(name), device);
    // The device's own model when there is a copy, else the newest older one.
    assert_eq!(
        take("which", HwModel::Bf3).unwrap().hw_model(),
        HwModel::Bf3
    );
    assert_eq!(
        take("which", HwModel::Cx8).unwrap().hw_model(),
        HwModel::Cx8
    );
    assert_eq!(
        take("which", HwModel::Cx9).unwrap().hw_model(),
        HwModel::Cx8
    );
    assert_eq!(
        take("legacy", HwModel::Cx9).unwrap().hw_model(),
        HwModel::Bf3
    );
    assert_eq!(
        take("newest", HwModel::Cx9).unwrap().hw_model(),
        HwModel::Cx9
    );
    for device in [HwModel::Bf3, HwModel::Cx8] {
        assert!(matches!(
            take("newest", device),
            Err(SelectError::NoCompatibleModel { .. })
        ));
    }
    // Exact: only that model, never an older compatible one.
    let exact = |name: &str, m| select(apps(), &AppSelectAttr::exact(name, m), HwModel::Cx9);
    assert_eq!(
        exact("legacy", HwModel::Bf3).unwrap().hw_model_label(),
        None
    );
    match exact("which", HwModel::Cx9) {
        Err(SelectError::NoExactModel {
            app,
            requested: HwModel::Cx9,
            available,
        }) => {
            assert_eq!(app, "which");
            assert_eq!(available, [HwModel::Bf3, HwModel::Cx8]);
        }
        other => panic!("{other:?}"),
    }
    let e = exact("legacy", HwModel::Cx8).unwrap_err().to_string();
    assert!(
        e.contains("no copy built for nv-dpa-cx8") && e.contains("nv-dpa-bf3"),
        "{e}"
    );
    // A name with no copy at all.
    match take("nope", HwModel::Bf3) {
        Err(SelectError::App(AppError::NoSuchApp { name, available })) => {
            assert_eq!(name, "nope");
            assert_eq!(available, ["which", "newest", "legacy"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn by_name_alone_the_blue_field_3_copy_is_taken() {
    let bytes = fixture();
    assert_eq!(
        App::from_host_elf(&bytes, "which").unwrap().hw_model(),
        HwModel::Bf3
    );
    assert_eq!(
        App::from_host_elf(&bytes, "newest").unwrap().hw_model(),
        HwModel::Cx9
    );
    // Copies for several models, none for BlueField-3: the caller must choose.
    let mut b = bytes.clone();
    rename(
        &mut b,
        ".dpa_bin_which@nv-dpa-bf3",
        ".dpa_bin_which@nv-dpa-cx9",
    );
    match App::from_host_elf(&b, "which") {
        Err(AppError::AmbiguousApp { name, models }) => {
            assert_eq!(name, "which");
            assert_eq!(models, [HwModel::Cx9, HwModel::Cx8]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        select(b_apps(&b), &AppSelectAttr::new("which"), HwModel::Cx9)
            .unwrap()
            .hw_model(),
        HwModel::Cx9
    );
}

fn b_apps(b: &[u8]) -> Vec<App> {
    App::all_in_host_elf(b).unwrap()
}

#[test]
fn malformed_model_labels_are_typed_errors() {
    // Two copies for one model.
    let mut b = fixture();
    rename(
        &mut b,
        ".dpa_bin_which@nv-dpa-cx8",
        ".dpa_bin_which@nv-dpa-bf3",
    );
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::DuplicateApp("which@nv-dpa-bf3".to_string())
    );
    let mut b = fixture();
    rename(
        &mut b,
        ".dpa_bin_which@nv-dpa-cx8",
        ".dpa_bin_which@NV-DPA-BF3",
    );
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::DuplicateModelCopy {
            app: "which".to_string(),
            model: HwModel::Bf3
        }
    );
    // An unlabelled copy is BlueField-3's: with a labelled BlueField-3 copy it is a duplicate.
    let mut b = fixture();
    rename(
        &mut b,
        ".dpa_bin_newest@nv-dpa-cx9",
        ".dpa_bin_legacy@nv-dpa-bf3",
    );
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::DuplicateModelCopy {
            app: "legacy".to_string(),
            model: HwModel::Bf3
        }
    );
    // A model no one knows.
    let mut b = fixture();
    rename(
        &mut b,
        ".dpa_bin_newest@nv-dpa-cx9",
        ".dpa_bin_newest@nv-dpa-cx7",
    );
    let e = App::all_in_host_elf(&b).unwrap_err();
    assert!(
        matches!(&e, AppError::UnknownHwModel { section, .. } if section == ".dpa_bin_newest@nv-dpa-cx7"),
        "{e:?}"
    );
    // No name before the label.
    let mut b = fixture();
    rename(
        &mut b,
        ".dpa_bin_newest@nv-dpa-cx9",
        ".dpa_bin_@newest@nv-dpa-cx",
    );
    assert!(matches!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::EmptyAppName(_)
    ));
}
