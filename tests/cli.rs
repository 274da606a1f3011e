//! Tests of the `stiction` command-line tool: help, usage errors, bad scene files,
//! and a real gradcheck (which passes once the analytic step Jacobians exist, and
//! until then fails with exit status 1 and the "not implemented" message).

use std::path::PathBuf;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stiction")).args(args).output().expect("stiction runs")
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stiction-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn scene_path(name: &str) -> String {
    format!("{}/examples/scenes/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn help() {
    for args in [&["--help"][..], &["-h"], &["gradcheck", "--help"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("stiction gradcheck SCENE.json") && text.contains("--method"), "{text}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let scene = scene_path("arm7.json");
    for args in [
        &[][..],
        &["frobnicate"],
        &["gradcheck"],
        &["gradcheck", &scene, "--method", "euler"],
        &["gradcheck", &scene, "--states", "0"],
        &["gradcheck", &scene, "--tol"],
        &["gradcheck", &scene, "--bogus"],
        &["gradcheck", &scene, &scene],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}: no message");
    }
}

#[test]
fn bad_scene_files_exit_2() {
    let missing = run(&["gradcheck", "/nonexistent/scene.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read scene"));
    for (name, text, want) in [
        ("malformed.json", "{ \"sample\": ", "serialization"),
        ("unknown_sample.json", r#"{"sample": "octopus"}"#, "unknown sample"),
        ("bad_param.json", r#"{"sample": "arm7", "params": ["mass:nope"]}"#, "no link named"),
        ("bad_state.json", r#"{"sample": "arm7", "state": {"q": [1], "v": [0]}}"#, "state.q"),
    ] {
        let p = tmp(name, text);
        let out = run(&["gradcheck", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want) && err.contains(name), "{name}: {err}");
    }
}

#[test]
fn gradcheck_of_the_arm_scene() {
    let out = run(&["gradcheck", &scene_path("arm7.json")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => assert!(stdout.contains("1 of 1 state(s) passed") && stdout.contains("dq+/dtheta"), "{stdout}"),
        Some(1) => assert!(stderr.contains("not implemented"), "a real failure:\n{stdout}\n{stderr}"),
        other => panic!("exit status {other:?}: {stderr}"),
    }
}

#[test]
fn gradcheck_of_the_soft_scenes() {
    for (name, integrator) in [("soft_bar.json", "backward_euler"), ("soft_two_region_block.json", "implicit_midpoint")]
    {
        let scene = scene_path(name);
        let raw = std::fs::read_to_string(&scene).unwrap();
        assert!(raw.contains(integrator), "{name}");
        let out = run(&["gradcheck", &scene, "--states", "2", "--seed", "3"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}:\n{stdout}\n{stderr}");
        assert!(stdout.contains("(soft): 2 state(s), seed 3"), "{stdout}");
        assert!(stdout.contains("2 of 2 state(s) passed") && stdout.contains("soft body ("), "{stdout}");
        for block in ["dx+/dx", "dx+/dv", "dx+/du", "dx+/dtargets", "dx+/dtheta", "dv+/dtheta"] {
            assert!(stdout.contains(block), "{name}: no {block}:\n{stdout}");
        }
    }
    // An absurd tolerance fails: exit status 1 and FAIL in the table.
    let out =
        run(&["gradcheck", &scene_path("soft_bar.json"), "--states", "1", "--tol", "1e-17", "--method", "central"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL") && stdout.contains("0 of 1 state(s) passed"), "{stdout}");
}

#[test]
fn bad_soft_scene_files_exit_2() {
    let material = r#""material": {"model": "neo_hookean", "youngs_modulus": 2e5, "poisson": 0.3, "density": 1000}"#;
    let bar = r#""mesh": {"box": {"cells": [2, 1, 1], "extent": [0.2, 0.1, 0.1]}}"#;
    for (name, text, want) in [
        (
            "soft_missing_mesh.json",
            format!(r#"{{"soft": {{"mesh": {{"file": "nowhere.msh"}}, {material}}}}}"#),
            "nowhere.msh",
        ),
        (
            "soft_empty_pin.json",
            format!(r#"{{"soft": {{{bar}, {material}, "pin": {{"where": {{"axis": "x", "at": 0.05}}}}}}}}"#),
            "soft.pin.where: no vertex has x = 0.05",
        ),
        (
            "soft_unknown_field.json",
            format!(r#"{{"soft": {{{bar}, {material}, "colour": "red"}}}}"#),
            "unknown field `colour`",
        ),
        (
            "soft_bad_material.json",
            format!(r#"{{"soft": {{{bar}, {}}}}}"#, material.replace("0.3", "0.6")),
            "\"poisson\" must lie in (-1, 0.5)",
        ),
        (
            "soft_bad_state.json",
            format!(r#"{{"soft": {{{bar}, {material}}}, "state": {{"x": [0], "v": [0]}}}}"#),
            "state.x",
        ),
    ] {
        let p = tmp(name, &text);
        let out = run(&["gradcheck", p.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
    }
}
