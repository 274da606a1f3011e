//! A stable Neo-Hookean ball dropped on the ground in a `World`: it falls, squashes on
//! impact, bounces and settles; the program prints the bounce and writes the centre-of-mass
//! height, the total energy and the squash over time as CSV (plot it with the printed
//! `scripts/plot_example.py` command).
//!
//! Run: `cargo run --release --example soft_ball_drop`.
//!
//! The ball (radius 5 cm, E = 100 kPa, ν = 0.35, ρ = 1000 kg/m³, stiffness damping 1 ms) is a
//! cube of 4 × 4 × 4 cells (384 tets) mapped onto a sphere: each vertex `p` of the cube
//! `[−1, 1]³` goes to `R s S(p / s)`, with `s = ‖p‖∞` its shell and `S` the smooth map of the
//! cube's surface onto the unit sphere, `x ↦ x √(1 − y²/2 − z²/2 + y²z²/3)` and likewise for y
//! and z, so the shells become concentric spheres and no tet turns over (checked by
//! `TetMesh::new`). Its boundary vertices touch the ground (μ = 0.8) as points. Released at
//! rest 10 cm above the ground and stepped for 0.7 s at dt = 1 ms, once by backward Euler
//! and once by the implicit midpoint rule, which keeps more of the bounce. The total energy
//! (kinetic, gravitational, elastic) never grows: contact and the integrators only take
//! energy out. The implicit-midpoint drop is written to `target/soft_ball_drop.trajectory.json`
//! (`python3 -m stiction.viz` makes it a web page).

#[path = "support/csv.rs"]
mod csv;
use nalgebra::DVector;
use std::sync::Arc;
use stiction::collision::Material;
use stiction::math::Vec3;
use stiction::soft::generate::box_mesh;
use stiction::soft::{MaterialModel, SoftBody, SoftDamping, SoftIntegrator, SoftMaterial, SoftOptions, TetMesh};
use stiction::viz::SceneOptions;
use stiction::world::{SoftSystem, StaticGeometry, World, WorldOptions, WorldState};

const DT: f64 = 1e-3;
const STEPS: usize = 700;
const RADIUS: f64 = 0.05;
const DROP: f64 = 0.10;

/// The bounce of one run.
#[derive(Clone, Debug)]
pub struct BallDrop {
    /// The integrator's name.
    pub integrator: &'static str,
    /// The centre of mass's downward speed just before the first contact (m/s).
    pub impact_speed: f64,
    /// Its largest upward speed during and after the first contact, before the second (m/s).
    pub rebound_speed: f64,
    /// `rebound_speed / impact_speed`.
    pub restitution: f64,
    /// The smallest height-to-width ratio of the ball (1 at rest).
    pub squash: f64,
    /// How long the first contact lasted (s).
    pub contact_time: f64,
    /// The highest centre of mass after the first bounce, above the ground (m).
    pub apex: f64,
    /// The total energy at the start and at the end (J).
    pub energy: (f64, f64),
    /// The largest increase of the total energy over one step (J).
    pub max_energy_increase: f64,
    /// The lowest vertex height over the run (m; negative: into the ground).
    pub lowest: f64,
}

fn main() -> stiction::Result<()> {
    run().map(|_| ())
}

/// A ball of `radius` centred at `center`: the cube `[−1, 1]³` of `cells`³ cells mapped onto it.
pub fn ball_mesh(cells: usize, radius: f64, center: Vec3) -> stiction::Result<TetMesh> {
    let cube = box_mesh([cells; 3], Vec3::new(2.0, 2.0, 2.0), Vec3::new(-1.0, -1.0, -1.0))?;
    let vertices = cube
        .vertices()
        .iter()
        .map(|p| {
            let s = p.amax();
            if s == 0.0 {
                return center;
            }
            let (x, y, z) = (p.x / s, p.y / s, p.z / s);
            let (x2, y2, z2) = (x * x, y * y, z * z);
            let on_sphere = Vec3::new(
                x * (1.0 - y2 / 2.0 - z2 / 2.0 + y2 * z2 / 3.0).sqrt(),
                y * (1.0 - z2 / 2.0 - x2 / 2.0 + z2 * x2 / 3.0).sqrt(),
                z * (1.0 - x2 / 2.0 - y2 / 2.0 + x2 * y2 / 3.0).sqrt(),
            );
            center + on_sphere * (radius * s)
        })
        .collect();
    TetMesh::new(vertices, cube.tets().to_vec())
}

/// Kinetic + gravitational + elastic energy (J).
fn energy(body: &SoftBody, x: &DVector<f64>, v: &DVector<f64>) -> stiction::Result<f64> {
    let g = body.gravity();
    let mut e = body.elastic_energy(x)?;
    for (i, &m) in body.masses().iter().enumerate() {
        let (p, u) = (x.fixed_rows::<3>(3 * i), v.fixed_rows::<3>(3 * i));
        e += 0.5 * m * u.norm_squared() - m * g.dot(&p);
    }
    Ok(e)
}

/// Mass-weighted mean of the vertex triples of `x`.
fn mean(body: &SoftBody, x: &DVector<f64>) -> Vec3 {
    let sum: Vec3 = body.masses().iter().enumerate().map(|(i, &m)| x.fixed_rows::<3>(3 * i) * m).sum();
    sum / body.total_mass()
}

/// Height over width (along x) of the vertices `x`.
fn aspect(x: &DVector<f64>) -> f64 {
    let extent = |k: usize| {
        let values = x.iter().skip(k).step_by(3);
        values.clone().fold(f64::NEG_INFINITY, |a, &b| a.max(b)) - values.fold(f64::INFINITY, |a, &b| a.min(b))
    };
    extent(2) / extent(0)
}

/// Drops the ball once with `integrator`; returns the bounce and the rows
/// `(t, com_z, com_vz, energy, height/width, contacts)`. The implicit-midpoint run writes its
/// trajectory for the browser viewer (`target/soft_ball_drop.trajectory.json`).
fn drop_ball(body: &Arc<SoftBody>, integrator: SoftIntegrator) -> stiction::Result<(BallDrop, Vec<[f64; 6]>)> {
    let options = SoftOptions { integrator, ..Default::default() };
    let soft = SoftSystem::new(body.clone(), options, Material::new(0.8, 0.0), 0.0)?;
    let world = World::new(
        vec![Arc::new(StaticGeometry::ground(Material::new(0.8, 0.0))), Arc::new(soft)],
        WorldOptions { dt: DT, ..Default::default() },
    )?;
    let n = body.ndof();
    let mut state = WorldState { q: body.rest_positions(), v: DVector::zeros(n) };
    let u = DVector::zeros(n);
    let e0 = energy(body, &state.q, &state.v)?;
    let mut rows = vec![[0.0, mean(body, &state.q).z, 0.0, e0, aspect(&state.q), 0.0]];
    let mut lowest = f64::INFINITY;
    let mut qs = vec![state.q.as_slice().to_vec()];
    for k in 0..STEPS {
        let record = world.step_recorded(&state, &u)?;
        state = record.next_state();
        qs.push(state.q.as_slice().to_vec());
        lowest = lowest.min(state.q.iter().skip(2).step_by(3).fold(f64::INFINITY, |a, &b| a.min(b)));
        let t = (k + 1) as f64 * DT;
        let e = energy(body, &state.q, &state.v)?;
        let contacts = record.contacts().len() as f64;
        rows.push([t, mean(body, &state.q).z, mean(body, &state.v).z, e, aspect(&state.q), contacts]);
    }
    if integrator == SoftIntegrator::ImplicitMidpoint {
        let title = "soft ball drop (implicit midpoint)".to_string();
        csv::write_world_trajectory("soft_ball_drop", &world, &qs, DT, SceneOptions { title, ..Default::default() });
    }
    // The first contact: the rows from the first with contacts to the next without.
    let first = rows.iter().position(|r| r[5] > 0.0).unwrap_or(rows.len() - 1);
    let last = first + rows[first..].iter().position(|r| r[5] == 0.0).unwrap_or(rows.len() - first);
    let second = last + rows[last..].iter().position(|r| r[5] > 0.0).unwrap_or(rows.len() - last);
    let impact_speed = -rows[first - 1][2];
    let rebound_speed = rows[first..second].iter().map(|r| r[2]).fold(f64::NEG_INFINITY, f64::max);
    let max_energy_increase = rows.windows(2).map(|w| w[1][3] - w[0][3]).fold(f64::NEG_INFINITY, f64::max);
    let bounce = BallDrop {
        integrator: match integrator {
            SoftIntegrator::BackwardEuler => "backward Euler",
            SoftIntegrator::ImplicitMidpoint => "implicit midpoint",
        },
        impact_speed,
        rebound_speed,
        restitution: rebound_speed / impact_speed,
        squash: rows[first..last.max(first + 1)].iter().map(|r| r[4]).fold(f64::INFINITY, f64::min),
        contact_time: (last - first) as f64 * DT,
        apex: rows[last..second].iter().map(|r| r[1]).fold(f64::NEG_INFINITY, f64::max),
        energy: (e0, rows[rows.len() - 1][3]),
        max_energy_increase,
        lowest,
    };
    Ok((bounce, rows))
}

/// Runs the example (prints, writes the CSV) and returns the bounce of each integrator.
pub fn run() -> stiction::Result<Vec<BallDrop>> {
    let mesh = ball_mesh(4, RADIUS, Vec3::new(0.0, 0.0, RADIUS + DROP))?;
    let body = Arc::new(
        SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.35, 1000.0))
            .damping(SoftDamping { mass: 0.0, stiffness: 1e-3 })
            .build()?,
    );
    println!(
        "ball: {} vertices, {} tets, {:.3} kg, dropped from {:.0} cm; {STEPS} steps of {} ms",
        body.mesh().num_vertices(),
        body.mesh().num_tets(),
        body.total_mass(),
        100.0 * DROP,
        1e3 * DT
    );
    let mut runs = Vec::new();
    let mut columns: Vec<Vec<[f64; 6]>> = Vec::new();
    for integrator in [SoftIntegrator::BackwardEuler, SoftIntegrator::ImplicitMidpoint] {
        let start = std::time::Instant::now();
        let (b, rows) = drop_ball(&body, integrator)?;
        println!(
            "{:<18} impact {:.3} m/s, rebound {:.3} m/s (restitution {:.2}), contact {:.0} ms, squash \
             (height/width) {:.3}, apex {:.1} mm, energy {:.4} -> {:.4} J ({:.2} s)",
            b.integrator,
            b.impact_speed,
            b.rebound_speed,
            b.restitution,
            1e3 * b.contact_time,
            b.squash,
            1e3 * b.apex,
            b.energy.0,
            b.energy.1,
            start.elapsed().as_secs_f64()
        );
        runs.push(b);
        columns.push(rows);
    }
    let rows: Vec<Vec<f64>> = (0..=STEPS)
        .map(|k| {
            let (be, im) = (&columns[0][k], &columns[1][k]);
            vec![be[0], be[1], im[1], be[3], im[3], be[4], im[4]]
        })
        .collect();
    csv::write_csv(
        "soft_ball_drop",
        "time,com_z_backward_euler,com_z_midpoint,energy_backward_euler,energy_midpoint,squash_backward_euler,\
         squash_midpoint",
        &rows,
        " --x time",
    );
    Ok(runs)
}
