//! Scene files: JSON descriptions of a gradient check, read by `stiction gradcheck`.
//! A scene is rigid ([`Scene`]: a model, simulation options, optional state and control,
//! parameters θ, tolerance) or soft ([`SoftScene`]: a soft body, step options, optional
//! state and control, tolerance; it has a top-level `"soft"` object instead of a model
//! source). [`AnyScene`] reads either kind and runs its checks. The format is documented
//! in `docs/gradients.md` ("Scene files"); a rigid scene:
//!
//! ```json
//! {
//!   "description": "optional free text",
//!   "sample": "arm7",
//!   "options": { "dt": 0.001, "gravity": [0, 0, -9.81], "velocity_products": "midpoint" },
//!   "state": { "q": [...], "v": [...] },
//!   "control": { "tau": [...] },
//!   "params": ["mass:link3", "damping:joint2", "gravity"],
//!   "tolerance": 1e-6
//! }
//! ```
//!
//! Exactly one model source: `"sample"`, `"urdf"` (with optional `"floating_base"` and
//! `"package_dirs"`, paths relative to the scene file), `"mjcf"` (an MJCF file, relative to
//! the scene file; its `<option timestep>` is the default `dt`) or `"model"` (a model as
//! written by [`Model::to_json`]). Robot files load with the loaders' defaults (welded links
//! merged).

use super::soft_scene::SoftScene;
use super::{check_soft_step, check_step, GradReport, GradcheckConfig};
use crate::error::{check_vector, Error, Result};
use crate::io::{load_mjcf, load_urdf, MjcfOptions, UrdfOptions};
use crate::math::{SplitMix64, Vec3};
use crate::model::{samples, ParamSpec};
use crate::sim::{Control, SimOptions, State};
use crate::step::{IntegratorOptions, VelocityProducts};
use crate::Model;
use nalgebra::DVector;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The raw file contents.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SceneFile {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    urdf: Option<String>,
    #[serde(default)]
    mjcf: Option<String>,
    #[serde(default)]
    floating_base: Option<bool>,
    #[serde(default)]
    package_dirs: Option<Vec<String>>,
    #[serde(default)]
    sample: Option<String>,
    #[serde(default)]
    model: Option<serde_json::Value>,
    #[serde(default)]
    options: Option<OptionsFile>,
    #[serde(default)]
    state: Option<StateFile>,
    #[serde(default)]
    control: Option<ControlFile>,
    #[serde(default)]
    params: Vec<String>,
    #[serde(default)]
    tolerance: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsFile {
    #[serde(default)]
    dt: Option<f64>,
    #[serde(default)]
    gravity: Option<[f64; 3]>,
    #[serde(default)]
    velocity_products: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    q: Vec<f64>,
    v: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlFile {
    tau: Vec<f64>,
}

/// A parsed and validated scene.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Free-text description from the file.
    pub description: Option<String>,
    /// The model.
    pub model: Model,
    /// Simulation options (defaults where the file is silent).
    pub options: SimOptions,
    /// The state to check, if the file gives one (lengths checked).
    pub state: Option<State>,
    /// The control to check, if the file gives one (length checked).
    pub control: Option<Control>,
    /// The differentiable parameters θ (parsed against the model).
    pub params: ParamSpec,
    /// The relative tolerance of the check, if the file sets one.
    pub tolerance: Option<f64>,
}

/// The sample model named by `spec`: `"arm7"`, `"humanoid"`, `"all_joint_types"`,
/// `"chain:N"` (spatial chain), `"pendulum:N"` (planar pendulum chain, 1 m, 1 kg links)
/// or `"binary_tree:D"`.
pub fn sample_model(spec: &str) -> Result<Model> {
    let (name, arg) = match spec.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (spec, None),
    };
    let count = |what: &str, max: usize| -> Result<usize> {
        let a = arg.ok_or_else(|| Error::InvalidInput(format!("sample '{name}' needs a size: '{name}:{what}'")))?;
        match a.trim().parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(Error::InvalidInput(format!("sample '{spec}': {what} must be an integer in 1..={max}"))),
        }
    };
    let no_arg = |m: fn() -> Model| match arg {
        None => Ok(m()),
        Some(_) => Err(Error::InvalidInput(format!("sample '{name}' takes no size"))),
    };
    match name {
        "arm7" => no_arg(samples::arm7),
        "humanoid" => no_arg(samples::humanoid),
        "all_joint_types" => no_arg(samples::all_joint_types),
        "chain" => Ok(samples::spatial_chain(count("N", 1000)?)),
        "pendulum" => Ok(samples::pendulum_chain(count("N", 1000)?, 1.0, 1.0)),
        "binary_tree" => samples::binary_tree(count("D", 10)?),
        _ => Err(Error::InvalidInput(format!(
            "unknown sample model '{spec}' (known: arm7, humanoid, all_joint_types, chain:N, pendulum:N, binary_tree:D)"
        ))),
    }
}

impl Scene {
    /// Reads and validates a rigid-body scene file; relative paths in it resolve against its
    /// directory. A soft-body scene (with `"soft"`) is refused: read either kind with
    /// [`AnyScene::load`].
    pub fn load(path: impl AsRef<Path>) -> Result<Scene> {
        let path = path.as_ref();
        let (text, dir) = super::read_scene(path)?;
        Scene::parse(&text, dir).map_err(|e| super::in_scene(path, e))
    }

    /// Parses rigid-body scene JSON; relative paths resolve against `base_dir`. A soft-body
    /// scene is refused ([`Error::InvalidInput`]): parse either kind with [`AnyScene::parse`].
    pub fn parse(json: &str, base_dir: &Path) -> Result<Scene> {
        if super::soft_scene::is_soft(json)? {
            return Err(Error::InvalidInput(
                "this is a soft-body scene (it has \"soft\"): read it with AnyScene, not Scene".into(),
            ));
        }
        let file: SceneFile = serde_json::from_str(json).map_err(|e| Error::Serde(e.to_string()))?;
        let sources = [file.urdf.is_some(), file.mjcf.is_some(), file.sample.is_some(), file.model.is_some()];
        if sources.iter().filter(|&&s| s).count() != 1 {
            return Err(Error::InvalidInput(
                "a scene needs exactly one model source: \"sample\", \"urdf\", \"mjcf\" or \"model\"".into(),
            ));
        }
        if file.urdf.is_none() && (file.floating_base.is_some() || file.package_dirs.is_some()) {
            return Err(Error::InvalidInput("\"floating_base\" and \"package_dirs\" apply to \"urdf\" only".into()));
        }
        let mut file_dt = None;
        let model = if let Some(mjcf) = &file.mjcf {
            let loaded = load_mjcf(base_dir.join(mjcf), &MjcfOptions::default())?;
            file_dt = loaded.timestep;
            loaded.model
        } else if let Some(urdf) = &file.urdf {
            let options = UrdfOptions {
                floating_base: file.floating_base.unwrap_or(false),
                package_dirs: file.package_dirs.iter().flatten().map(|d| base_dir.join(d)).collect::<Vec<PathBuf>>(),
                ..Default::default()
            };
            load_urdf(base_dir.join(urdf), &options)?.model
        } else if let Some(sample) = &file.sample {
            sample_model(sample)?
        } else {
            let value = file.model.expect("one source");
            serde_json::from_value::<Model>(value).map_err(|e| Error::Serde(format!("\"model\": {e}")))?
        };
        let mut options = SimOptions::default();
        if let Some(dt) = file_dt {
            options.dt = dt;
        }
        if let Some(o) = file.options {
            if let Some(dt) = o.dt {
                options.dt = dt;
            }
            if !(options.dt.is_finite() && options.dt > 0.0 && options.dt <= SimOptions::MAX_DT) {
                return Err(Error::InvalidInput(format!(
                    "\"dt\" must be positive and at most {} s, got {}",
                    SimOptions::MAX_DT,
                    options.dt
                )));
            }
            if let Some(g) = o.gravity {
                options.gravity = Some(Vec3::from(g));
            }
            if let Some(vp) = o.velocity_products {
                let velocity_products = match vp.as_str() {
                    "midpoint" => VelocityProducts::Midpoint,
                    "explicit" => VelocityProducts::Explicit,
                    other => {
                        return Err(Error::InvalidInput(format!(
                            "\"velocity_products\" must be \"midpoint\" or \"explicit\", got \"{other}\""
                        )))
                    }
                };
                options.integrator = IntegratorOptions { velocity_products, ..options.integrator };
            }
        }
        let state = match file.state {
            Some(s) => {
                check_vector("state.q", &s.q, model.nq())?;
                check_vector("state.v", &s.v, model.nv())?;
                let q = DVector::from_vec(s.q);
                model.check_quaternions(q.as_slice())?;
                Some(State { q, v: DVector::from_vec(s.v) })
            }
            None => None,
        };
        let control = match file.control {
            Some(c) => {
                check_vector("control.tau", &c.tau, model.nv())?;
                Some(Control::torques(DVector::from_vec(c.tau)))
            }
            None => None,
        };
        let params = ParamSpec::parse(&model, &file.params)?;
        if let Some(t) = file.tolerance {
            if !(t.is_finite() && t > 0.0) {
                return Err(Error::InvalidInput(format!("\"tolerance\" must be positive, got {t}")));
            }
        }
        Ok(Scene { description: file.description, model, options, state, control, params, tolerance: file.tolerance })
    }

    /// The `(state, control)` pairs to check: `n` of them; the first uses the scene's
    /// state when it has one, the others random states (configurations from
    /// [`Model::random_configuration`], velocities uniform in [−1, 1]) reproducible from
    /// `seed`; every pair uses the scene's control, or random torques uniform in [−1, 1].
    pub fn cases(&self, n: usize, seed: u64) -> Vec<(State, Control)> {
        (0..n).map(|k| self.case(k, seed)).collect()
    }

    /// Case `k` of [`Scene::cases`] (the same whatever their number).
    pub fn case(&self, k: usize, seed: u64) -> (State, Control) {
        let (nv, m) = (self.model.nv(), &self.model);
        let mut rng = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(k as u64));
        let random_state = |rng: &mut SplitMix64| State {
            q: m.random_configuration(rng.next_u64()),
            v: DVector::from_fn(nv, |_, _| rng.range(-1.0, 1.0)),
        };
        let state = match (&self.state, k) {
            (Some(s), 0) => s.clone(),
            _ => random_state(&mut rng),
        };
        let control = match &self.control {
            Some(c) => c.clone(),
            None => Control::torques(DVector::from_fn(nv, |_, _| rng.range(-1.0, 1.0))),
        };
        (state, control)
    }
}

/// A scene file of either kind: rigid ([`Scene`]) or soft-body ([`SoftScene`], a file with a
/// top-level `"soft"` object).
#[derive(Clone, Debug)]
pub enum AnyScene {
    /// An articulated rigid-body scene (a model source); boxed, as a model is much larger
    /// than a soft body's shared handle.
    Rigid(Box<Scene>),
    /// A soft-body scene.
    Soft(SoftScene),
}

impl AnyScene {
    /// Reads and validates a scene file of either kind; relative paths in it resolve
    /// against its directory. Errors name the file (see [`Scene::load`], [`SoftScene::load`]).
    pub fn load(path: impl AsRef<Path>) -> Result<AnyScene> {
        let path = path.as_ref();
        let (text, dir) = super::read_scene(path)?;
        AnyScene::parse(&text, dir).map_err(|e| super::in_scene(path, e))
    }

    /// Parses scene JSON of either kind: a soft-body scene when it has a top-level
    /// `"soft"`, else a rigid one. Relative paths resolve against `base_dir`.
    pub fn parse(json: &str, base_dir: &Path) -> Result<AnyScene> {
        if super::soft_scene::is_soft(json)? {
            Ok(AnyScene::Soft(SoftScene::parse(json, base_dir)?))
        } else {
            Ok(AnyScene::Rigid(Box::new(Scene::parse(json, base_dir)?)))
        }
    }

    /// `"rigid"` or `"soft"`.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyScene::Rigid(_) => "rigid",
            AnyScene::Soft(_) => "soft",
        }
    }

    /// Free-text description from the file.
    pub fn description(&self) -> Option<&str> {
        match self {
            AnyScene::Rigid(s) => s.description.as_deref(),
            AnyScene::Soft(s) => s.description.as_deref(),
        }
    }

    /// The relative tolerance of the check, if the file sets one.
    pub fn tolerance(&self) -> Option<f64> {
        match self {
            AnyScene::Rigid(s) => s.tolerance,
            AnyScene::Soft(s) => s.tolerance,
        }
    }

    /// Whether the file gives a state to check.
    pub fn has_state(&self) -> bool {
        match self {
            AnyScene::Rigid(s) => s.state.is_some(),
            AnyScene::Soft(s) => s.state.is_some(),
        }
    }

    /// Runs the gradient check of case `k` ([`Scene::case`] or [`SoftScene::case`]) drawn
    /// with `seed`, by [`check_step`] or [`check_soft_step`]: case 0 is the scene's state
    /// when it has one. Errors: those of the check (a step that fails, Jacobians that
    /// cannot be computed, invalid settings).
    pub fn check(&self, k: usize, seed: u64, config: &GradcheckConfig) -> Result<GradReport> {
        match self {
            AnyScene::Rigid(s) => {
                let (state, control) = s.case(k, seed);
                check_step(&s.model, &s.options, &s.params, &state, &control, config)
            }
            AnyScene::Soft(s) => {
                let case = s.case(k, seed);
                check_soft_step(&s.body, &case.state, &case.u, &case.targets, &s.options, config)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Scene> {
        Scene::parse(json, Path::new("."))
    }

    #[test]
    fn samples_and_errors() {
        for (spec, nv) in
            [("arm7", 7), ("chain:3", 3), ("pendulum:4", 4), ("binary_tree:3", 7), ("all_joint_types", 18)]
        {
            let s = parse(&format!(r#"{{"sample": "{spec}"}}"#)).unwrap();
            assert_eq!(s.model.nv(), nv, "{spec}");
            assert!(s.params.is_empty() && s.state.is_none() && s.control.is_none());
            assert_eq!(s.options, SimOptions::default());
        }
        assert!(sample_model("humanoid").is_ok());
        for bad in ["chain", "chain:0", "chain:x", "arm7:2", "octopus"] {
            assert!(sample_model(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn full_scene() {
        let s = parse(
            r#"{"sample": "pendulum:2", "description": "d",
                "options": {"dt": 0.002, "gravity": [0, 0, -1], "velocity_products": "explicit"},
                "state": {"q": [0.1, 0.2], "v": [0.0, 1.0]}, "control": {"tau": [0.5, 0.0]},
                "params": ["gravity", "damping:joint1"], "tolerance": 1e-5}"#,
        );
        let s = match s {
            Ok(s) => s,
            Err(e) => {
                // joint names of the pendulum sample
                panic!("{e}: joints {:?}", sample_model("pendulum:2").unwrap().joint_names())
            }
        };
        assert_eq!(s.options.dt, 0.002);
        assert_eq!(s.options.gravity, Some(Vec3::new(0.0, 0.0, -1.0)));
        assert_eq!(s.options.integrator.velocity_products, VelocityProducts::Explicit);
        assert_eq!(s.params.len(), 4);
        assert_eq!(s.tolerance, Some(1e-5));
        let cases = s.cases(3, 7);
        assert_eq!(cases.len(), 3);
        assert_eq!(&cases[0].0, s.state.as_ref().unwrap());
        assert_ne!(cases[1].0, cases[2].0);
        assert!(cases.iter().all(|c| c.1.tau[0] == 0.5));
        assert_eq!(s.cases(3, 7)[2].0, cases[2].0, "reproducible");
    }

    #[test]
    fn inline_model_and_urdf() {
        let m = sample_model("pendulum:2").unwrap();
        let json = format!(r#"{{"model": {}}}"#, m.to_json().unwrap());
        assert_eq!(parse(&json).unwrap().model, m);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/urdf");
        let s = Scene::parse(r#"{"urdf": "full.urdf", "floating_base": true, "package_dirs": ["packages"]}"#, &dir)
            .unwrap();
        assert!(s.model.joints()[0].kind == crate::JointType::Free);
    }

    #[test]
    fn bad_scenes() {
        let cases = [
            ("{", "serialization"),
            (r#"{"params": []}"#, "exactly one model source"),
            (r#"{"sample": "arm7", "urdf": "x.urdf"}"#, "exactly one model source"),
            (r#"{"sample": "arm7", "floating_base": true}"#, "apply to \"urdf\" only"),
            (r#"{"sample": "arm7", "colour": 3}"#, "unknown field"),
            (r#"{"sample": "arm7", "options": {"dt": -1}}"#, "\"dt\""),
            (r#"{"sample": "arm7", "options": {"velocity_products": "rk4"}}"#, "velocity_products"),
            (r#"{"sample": "arm7", "state": {"q": [0], "v": [0]}}"#, "state.q"),
            (r#"{"sample": "arm7", "control": {"tau": [0]}}"#, "control.tau"),
            (r#"{"sample": "arm7", "params": ["mass:nope"]}"#, "no link named"),
            (r#"{"sample": "arm7", "tolerance": 0}"#, "tolerance"),
            (r#"{"model": {"name": 3}}"#, "\"model\""),
            (r#"{"urdf": "does/not/exist.urdf"}"#, "cannot read"),
        ];
        for (json, want) in cases {
            let e = parse(json).unwrap_err().to_string();
            assert!(e.contains(want), "{json}: {e}");
        }
        let e = Scene::load("/nonexistent/scene.json").unwrap_err().to_string();
        assert!(e.contains("cannot read scene"), "{e}");
    }

    #[test]
    fn either_kind() {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
        for (name, kind) in [
            ("arm7.json", "rigid"),
            ("all_joint_types.json", "rigid"),
            ("soft_bar.json", "soft"),
            ("soft_two_region_block.json", "soft"),
        ] {
            let path = examples.join(name);
            let s = AnyScene::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.kind(), kind, "{name}");
            assert!(s.description().is_some() && s.tolerance() == Some(1e-6), "{name}");
            assert_eq!(s.has_state(), name == "arm7.json");
            assert_eq!(Scene::load(&path).is_ok(), kind == "rigid", "{name}");
        }
        let e = Scene::load(examples.join("soft_bar.json")).unwrap_err().to_string();
        assert!(e.contains("soft_bar.json") && e.contains("soft-body scene") && e.contains("AnyScene"), "{e}");
        // Errors of either kind name the file; a malformed file is a JSON error.
        for (json, want) in [
            ("{", "serialization"),
            (r#"{"soft": 3}"#, "invalid type"),
            (r#"{"sample": "arm7", "soft": {}}"#, "unknown field `sample`"),
            (r#"{"sample": "arm7", "x": 1}"#, "unknown field `x`"),
        ] {
            let e = AnyScene::parse(json, Path::new(".")).unwrap_err().to_string();
            assert!(e.contains(want), "{json}: {e}");
        }
        // A soft check through AnyScene is the one of the case it draws.
        let s = AnyScene::load(examples.join("soft_bar.json")).unwrap();
        let config = GradcheckConfig::default();
        let report = s.check(1, 4, &config).unwrap();
        assert!(report.passed(), "{report}");
        let AnyScene::Soft(soft) = &s else { unreachable!() };
        let case = soft.case(1, 4);
        let direct = check_soft_step(&soft.body, &case.state, &case.u, &case.targets, &soft.options, &config).unwrap();
        assert_eq!(direct.max_rel_error(), report.max_rel_error());
    }
}
