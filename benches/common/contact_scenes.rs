//! The contact scenes of the backward-pass benches, shared with the allocation test
//! (`tests/backward_allocations.rs` includes this file by path): a box sliding on the
//! ground, four boxes (two stacks of two) on the ground, and a planar 5-link arm pushing
//! a box. dt = 1 ms, default options.

use nalgebra::DVector;
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, Material, ParamSpec, WORLD};
use stiction::{Joint, Model, ModelBuilder, SimOptions, Simulator, State};

/// The scenes' time step.
pub const DT: f64 = 1e-3;

/// A scene: its model, start state, constant torques and θ.
pub struct Scene {
    pub name: &'static str,
    pub model: Model,
    pub state: State,
    pub tau: DVector<f64>,
    pub params: Vec<&'static str>,
}

fn ground(b: &mut ModelBuilder, mu: f64) {
    b.add_link(
        Body::massless(WORLD).with_collision(
            CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(Material::new(mu, 0.0)),
        ),
    );
}

fn free_box(b: &mut ModelBuilder, name: &str, h: Vec3, mass: f64, mu: f64) {
    b.add_body(
        WORLD,
        Joint::free(format!("{name}_free")),
        Body::new(name, Inertia::solid_box(mass, h * 2.0)).with_collision(
            CollisionShape::new(Geometry::Box { half_extents: h }, SE3::identity())
                .with_material(Material::new(mu, 0.0)),
        ),
    );
}

/// Writes a free body's position and a rotation about z into its 7 coordinates.
fn place(q: &mut DVector<f64>, at: usize, p: Vec3, yaw: f64) {
    q.rows_mut(at, 7).copy_from_slice(&[p.x, p.y, p.z, (0.5 * yaw).cos(), 0.0, 0.0, (0.5 * yaw).sin()]);
}

/// A 1 kg box sliding at 0.3 m/s on the ground (four sliding corner contacts).
pub fn box_on_ground() -> Scene {
    let mut b = ModelBuilder::new("box_on_ground");
    ground(&mut b, 0.5);
    let h = Vec3::new(0.1, 0.1, 0.05);
    free_box(&mut b, "box", h, 1.0, 0.5);
    let model = b.build().unwrap();
    let mut q = model.neutral();
    place(&mut q, 0, Vec3::new(0.0, 0.0, h.z - 1e-4), 0.2);
    let mut v = DVector::zeros(6);
    v[3] = 0.3;
    Scene { name: "box_on_ground", model, state: State { q, v }, tau: DVector::zeros(6), params: vec!["mass:box"] }
}

/// Two stacks of two boxes (unequal masses) on the ground: 16 contacts.
pub fn four_boxes() -> Scene {
    let mut b = ModelBuilder::new("four_boxes");
    ground(&mut b, 0.7);
    let (big, small) = (Vec3::new(0.1, 0.1, 0.05), Vec3::new(0.06, 0.06, 0.04));
    for k in 0..2 {
        free_box(&mut b, &format!("base{k}"), big, 3.0 + k as f64, 0.7);
        free_box(&mut b, &format!("top{k}"), small, 0.5, 0.7);
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    // Bodies are numbered depth-first: base0, top0, base1, top1 follow the builder order.
    for k in 0..2 {
        let x = 0.5 * k as f64;
        place(&mut q, 14 * k, Vec3::new(x, 0.0, big.z - 1e-4), 0.1);
        place(&mut q, 14 * k + 7, Vec3::new(x + 0.01, -0.01, 2.0 * big.z + small.z - 2e-4), 0.4);
    }
    let nv = model.nv();
    Scene {
        name: "four_boxes",
        model,
        state: State { q, v: DVector::zeros(nv) },
        tau: DVector::zeros(nv),
        params: vec!["mass:top0", "mass:base1"],
    }
}

/// A planar 5-link arm (capsules on hinges about z) pushing a 2 kg box along the ground.
pub fn arm5_push_box() -> Scene {
    let mut b = ModelBuilder::new("arm5_push_box");
    ground(&mut b, 0.5);
    let (height, r, length) = (0.08, 0.02, 0.12);
    let mut parent = WORLD.to_string();
    for k in 0..5 {
        let placement =
            SE3::from_translation(if k == 0 { Vec3::new(0.0, 0.0, height) } else { Vec3::new(length, 0.0, 0.0) });
        let link = format!("link{k}");
        let capsule = CollisionShape::new(
            Geometry::Capsule { radius: r, length },
            SE3::new(
                SE3::from_axis_angle(&Vec3::y(), std::f64::consts::FRAC_PI_2).rot,
                Vec3::new(0.5 * length, 0.0, 0.0),
            ),
        )
        .with_material(Material::new(1.0, 0.0));
        b.add_body(
            &parent,
            Joint::revolute(format!("joint{k}"), Vec3::z()).with_placement(placement),
            stiction::model::samples::rod(&link, 0.3, length, r, Vec3::x()).with_collision(capsule),
        );
        parent = link;
    }
    let h = Vec3::new(0.08, 0.08, 0.08);
    free_box(&mut b, "box", h, 2.0, 0.5);
    let model = b.build().unwrap();
    let mut q = model.neutral();
    // The arm lies straight along x; the box touches its tip.
    let tip = 5.0 * length;
    place(&mut q, 5, Vec3::new(tip + r + h.x - 1.5e-4, 0.0, h.z - 2e-4), 0.0);
    let mut tau = DVector::zeros(model.nv());
    tau[0] = 0.5;
    let nv = model.nv();
    Scene {
        name: "arm5_push_box",
        model,
        state: State { q, v: DVector::zeros(nv) },
        tau,
        params: vec!["mass:box", "friction:box"],
    }
}

/// The scene's simulator (default options, dt = 1 ms, θ set).
pub fn simulator(s: &Scene) -> Simulator {
    let mut sim = Simulator::new(s.model.clone(), SimOptions { dt: DT, ..Default::default() }).unwrap();
    sim.set_params(ParamSpec::parse(&s.model, &s.params).unwrap());
    sim
}

/// The three scenes.
pub fn all() -> [Scene; 3] {
    [box_on_ground(), four_boxes(), arm5_push_box()]
}
