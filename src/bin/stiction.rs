//! The `stiction` command-line tool.
//!
//! `stiction gradcheck SCENE.json [--states N] [--seed S] [--method central|ridders|both] [--tol X] [--step H]`
//! checks the analytic Jacobians of one simulator step (rigid scenes) or one soft-body
//! step (soft scenes) against finite differences on the states of a scene file (see
//! `docs/gradients.md`, "Scene files"). Exit status:
//! 0 when every check passes, 1 when one fails (or the Jacobians cannot be computed),
//! 2 on usage or input errors.

use std::process::ExitCode;
use stiction::gradcheck::{AnyScene, FdMethod, GradcheckConfig};

const HELP: &str = "\
stiction: tools for the stiction differentiable physics engine

USAGE:
    stiction gradcheck SCENE.json [OPTIONS]
    stiction --help

COMMANDS:
    gradcheck   Check the analytic Jacobians of one simulator step (or soft-body step)
                against finite differences, on the states of a scene file
                (docs/gradients.md, \"Scene files\")

GRADCHECK OPTIONS:
    --states N        number of states to check (default: 1 if the scene has a state, else 5)
    --seed S          seed of the random states and controls (default: 0)
    --method M        central | ridders | both (default: ridders)
    --tol X           relative tolerance (default: the scene's \"tolerance\", else 1e-6)
    --step H          finite-difference step (Ridders: initial step; default 1e-3)
    -h, --help        print this help

EXIT STATUS:
    0  every check passed
    1  a check failed, or the Jacobians could not be computed
    2  usage or input error (bad arguments, unreadable or invalid scene)
";

/// Parsed `gradcheck` arguments.
struct Args {
    scene: String,
    states: Option<usize>,
    seed: u64,
    config: GradcheckConfig,
    tol: Option<f64>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut scene = None;
    let mut out = Args { scene: String::new(), states: None, seed: 0, config: GradcheckConfig::default(), tol: None };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--states" => {
                let v = value("--states")?;
                out.states = Some(v.parse().ok().filter(|&n: &usize| n > 0).ok_or(format!("bad --states '{v}'"))?);
            }
            "--seed" => {
                let v = value("--seed")?;
                out.seed = v.parse().map_err(|_| format!("bad --seed '{v}'"))?;
            }
            "--method" => {
                let v = value("--method")?;
                out.config.method =
                    FdMethod::parse(&v).ok_or(format!("bad --method '{v}' (central, ridders or both)"))?;
            }
            "--tol" => {
                let v = value("--tol")?;
                out.tol =
                    Some(v.parse().ok().filter(|x: &f64| x.is_finite() && *x > 0.0).ok_or(format!("bad --tol '{v}'"))?);
            }
            "--step" => {
                let v = value("--step")?;
                out.config.step =
                    v.parse().ok().filter(|x: &f64| x.is_finite() && *x > 0.0).ok_or(format!("bad --step '{v}'"))?;
            }
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option '{s}'")),
            s => {
                if scene.replace(s.to_string()).is_some() {
                    return Err(format!("unexpected argument '{s}' (one scene file only)"));
                }
            }
        }
    }
    out.scene = scene.ok_or("gradcheck needs a scene file")?;
    Ok(out)
}

fn gradcheck(args: Args) -> ExitCode {
    let scene = match AnyScene::load(&args.scene) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut config = args.config;
    config.rel_tol = args.tol.or(scene.tolerance()).unwrap_or(config.rel_tol);
    let n = args.states.unwrap_or(if scene.has_state() { 1 } else { 5 });
    if let Some(d) = scene.description() {
        println!("{d}");
    }
    println!(
        "scene '{}' ({}): {} state(s), seed {}, method {}",
        args.scene,
        scene.kind(),
        n,
        args.seed,
        config.method.name()
    );
    let mut passed = 0;
    for k in 0..n {
        println!();
        println!("state {}/{}:", k + 1, n);
        match scene.check(k, args.seed, &config) {
            Ok(report) => {
                println!("{report}");
                passed += report.passed() as usize;
            }
            Err(e) => {
                eprintln!("error: state {}: {e}", k + 1);
                println!("FAIL: {e}");
            }
        }
    }
    println!();
    println!("{passed} of {n} state(s) passed");
    if passed == n {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprint!("{HELP}");
        return ExitCode::from(2);
    }
    if args.iter().any(|a| a == "--help" || a == "-h") || args[0] == "help" {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    match args[0].as_str() {
        "gradcheck" => match parse_args(&args[1..]) {
            Ok(a) => gradcheck(a),
            Err(e) => {
                eprintln!("error: {e}\n(run 'stiction --help' for usage)");
                ExitCode::from(2)
            }
        },
        other => {
            eprintln!("error: unknown command '{other}'\n(run 'stiction --help' for usage)");
            ExitCode::from(2)
        }
    }
}
