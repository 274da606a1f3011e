//! Prints the size and layout of a model: from a URDF file given on the command
//! line, or of every built-in sample model.
//!
//! Run: `cargo run --release --example model_info [-- path/to/robot.urdf [--floating] [--package DIR]...]`

use stiction::io::{load_urdf, UrdfOptions};
use stiction::model::samples;
use stiction::Model;

fn describe(model: &Model) {
    println!(
        "{:<22} nq = {:3}  nv = {:3}  bodies = {:3}  mass = {:8.3} kg",
        model.name(),
        model.nq(),
        model.nv(),
        model.nbodies(),
        model.total_mass()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(path) = args.first() {
        let package_dirs = args.windows(2).filter(|w| w[0] == "--package").map(|w| w[1].clone().into()).collect();
        let options =
            UrdfOptions { floating_base: args.iter().any(|a| a == "--floating"), package_dirs, ..Default::default() };
        match load_urdf(path, &options) {
            Ok(loaded) => {
                describe(&loaded.model);
                for j in loaded.model.joints() {
                    println!("  joint {:<24} {:<10} nq {} nv {}", j.name, j.kind.name(), j.nq(), j.nv());
                }
                for w in &loaded.warnings {
                    println!("  warning: {w}");
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    for m in [
        samples::pendulum_chain(2, 1.0, 1.0),
        samples::arm7(),
        samples::spatial_chain(30),
        samples::binary_tree(5).expect("depth 5 is valid"),
        samples::humanoid(),
        samples::all_joint_types(),
        samples::random_tree(40, 6, true),
        samples::random_tree(55, 7, false),
    ] {
        describe(&m);
    }
}
