//! CSV output shared by the examples: they write their trajectories or loss histories to
//! `target/NAME.csv` and print the `scripts/plot_example.py` command that draws them.
#![allow(dead_code)] // each example uses a part

/// Writes the cost per iteration of every fit (one column each) to `target/{name}.csv` and
/// prints the command that plots it.
pub fn write_losses(name: &str, losses: &[(String, Vec<f64>)]) {
    let header = std::iter::once("iteration".to_string()).chain(losses.iter().map(|(n, _)| n.clone()));
    let longest = losses.iter().map(|(_, h)| h.len()).max().unwrap_or(0);
    let rows: Vec<Vec<f64>> = (0..longest)
        .map(|i| {
            std::iter::once(i as f64).chain(losses.iter().map(|(_, h)| h.get(i).copied().unwrap_or(f64::NAN))).collect()
        })
        .collect();
    write_csv(name, &header.collect::<Vec<_>>().join(","), &rows, "");
}

/// Writes `rows` under the CSV `header` to `target/{name}.csv` and prints the command that plots it.
pub fn write_csv(name: &str, header: &str, rows: &[Vec<f64>], plot_args: &str) {
    let path = std::path::Path::new("target").join(format!("{name}.csv"));
    let mut text = format!("{header}\n");
    for row in rows {
        let cell =
            |x: &f64| if *x != 0.0 && (x.abs() < 1e-4 || x.abs() >= 1e9) { format!("{x:e}") } else { x.to_string() };
        text += &row.iter().map(cell).collect::<Vec<_>>().join(",");
        text.push('\n');
    }
    match std::fs::create_dir_all("target").and_then(|_| std::fs::write(&path, text)) {
        Ok(()) => {
            println!("wrote {}; plot it with", path.display());
            println!("  python3 scripts/plot_example.py {}{plot_args} --out target/{name}.png", path.display());
        }
        Err(e) => println!("could not write {}: {e}", path.display()),
    }
}

/// Replays the first experiment of a system-identification example with the fitted model
/// and writes its trajectory file (see [`write_trajectory`]).
pub fn write_fitted_trajectory(
    name: &str,
    fitted: &stiction::Model,
    options: &stiction::SimOptions,
    experiment: &stiction::optim::Trajectory,
) -> stiction::Result<()> {
    let x0 = stiction::State { q: experiment.q0.clone(), v: experiment.v0.clone() };
    let controls: Vec<stiction::Control> =
        experiment.controls.iter().map(|u| stiction::Control::torques(u.clone())).collect();
    let mut states = vec![x0.clone()];
    states.extend(stiction::Simulator::new(fitted.clone(), options.clone())?.rollout(&x0, &controls)?);
    write_trajectory(name, fitted, &states, options.dt, &[]);
    Ok(())
}

/// Writes a trajectory of `model` (rows of `states` at times `k·dt`) to
/// `target/{name}.trajectory.json` in the `stiction-trajectory` format (docs/viz.md, the
/// model-reference form), with `markers` (`(name, position, radius)`; a radius of 0: the
/// viewer's default) and, for a model with collision shapes, `"contacts": "auto"` (the viewer
/// draws the model's contacts at every frame), and prints the command that turns it into a
/// web page.
pub fn write_trajectory(
    name: &str,
    model: &stiction::Model,
    states: &[stiction::State],
    dt: f64,
    markers: &[(&str, [f64; 3], f64)],
) {
    let path = std::path::Path::new("target").join(format!("{name}.trajectory.json"));
    let model_json = match model.to_json() {
        Ok(j) => j,
        Err(e) => return println!("could not write {}: {e}", path.display()),
    };
    let row = |q: &[f64]| format!("[{}]", q.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","));
    let q = states.iter().map(|s| row(s.q.as_slice())).collect::<Vec<_>>().join(",");
    let markers = markers
        .iter()
        .map(|(n, p, r)| {
            let radius = if *r > 0.0 { format!(",\"radius\":{r}") } else { String::new() };
            format!("{{\"name\":\"{n}\",\"position\":{}{radius}}}", row(p))
        })
        .collect::<Vec<_>>()
        .join(",");
    let contacts = if model.collision_model().shapes.is_empty() { "" } else { ",\"contacts\":\"auto\"" };
    let text = format!(
        "{{\"format\":\"stiction-trajectory\",\"version\":1,\"title\":\"{name}\",\"dt\":{dt},\"model\":{model_json},\"q\":[{q}],\"markers\":[{markers}]{contacts}}}\n"
    );
    match std::fs::create_dir_all("target").and_then(|_| std::fs::write(&path, text)) {
        Ok(()) => {
            println!("wrote {}; view it with", path.display());
            println!("  python3 -m stiction.viz {} -o target/{name}.html", path.display());
        }
        Err(e) => println!("could not write {}: {e}", path.display()),
    }
}

/// Writes a trajectory of `world` (row `k` of `qs`: the configuration at time `k·dt`) to
/// `target/{name}.trajectory.json` in the `stiction-trajectory` format (docs/viz.md, the scene
/// form: shapes, soft-body surfaces, markers; `stiction::viz`), titled `name` unless
/// `options` has a title, and prints the command that turns it into a web page.
pub fn write_world_trajectory<Q: AsRef<[f64]>>(
    name: &str,
    world: &stiction::world::World,
    qs: &[Q],
    dt: f64,
    mut options: stiction::viz::SceneOptions,
) {
    let path = std::path::Path::new("target").join(format!("{name}.trajectory.json"));
    if options.title == stiction::viz::SceneOptions::default().title {
        options.title = name.to_string();
    }
    let text = match stiction::viz::world_scene_json(world, qs, dt, &options) {
        Ok(t) => t,
        Err(e) => return println!("could not write {}: {e}", path.display()),
    };
    match std::fs::create_dir_all("target").and_then(|_| std::fs::write(&path, text + "\n")) {
        Ok(()) => {
            println!("wrote {}; view it with", path.display());
            println!("  python3 -m stiction.viz {} -o target/{name}.html", path.display());
        }
        Err(e) => println!("could not write {}: {e}", path.display()),
    }
}

/// [`write_world_trajectory`] for a soft body stepped on its own (row `k` of `xs`: its vertex
/// positions at time `k·dt`): the trajectory of the world of that one body.
pub fn write_soft_trajectory<Q: AsRef<[f64]>>(
    name: &str,
    body: &std::sync::Arc<stiction::soft::SoftBody>,
    xs: &[Q],
    dt: f64,
    options: stiction::viz::SceneOptions,
) {
    use stiction::world::{SoftSystem, World, WorldOptions};
    let world = SoftSystem::new(body.clone(), Default::default(), Default::default(), 0.0)
        .and_then(|soft| World::new(vec![std::sync::Arc::new(soft)], WorldOptions::default()));
    match world {
        Ok(world) => write_world_trajectory(name, &world, xs, dt, options),
        Err(e) => println!("could not write target/{name}.trajectory.json: {e}"),
    }
}
