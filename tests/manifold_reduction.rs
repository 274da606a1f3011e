//! Contact-manifold reduction in the simulator (`collision::narrow_phase::MAX_PAIR_CONTACTS`):
//! shapes whose contact polygons have many corners rest on the kept corners as they do
//! on all of them.

use nalgebra::DVector;
use stiction::collision::narrow_phase::MAX_PAIR_CONTACTS;
use stiction::math::{Inertia, SE3};
use stiction::model::{Body, CollisionShape, Geometry, WORLD};
use stiction::{Control, Joint, ModelBuilder, SimOptions, Simulator, State};

/// A free cylinder (16-sided prism, radius 0.15 m, length 0.2 m, 2 kg) above the ground,
/// its axis tilted by `tilt` about x.
fn cylinder_on_ground(height: f64, tilt: f64) -> (stiction::Model, State) {
    let mut b = ModelBuilder::new("cylinder_on_ground");
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, SE3::identity())));
    let (r, l) = (0.15, 0.2);
    b.add_body(
        WORLD,
        Joint::free("free"),
        Body::new("cylinder", Inertia::solid_cylinder(2.0, r, l))
            .with_collision(CollisionShape::new(Geometry::Cylinder { radius: r, length: l }, SE3::identity())),
    );
    let model = b.build().unwrap();
    let mut q = model.neutral();
    q[2] = height;
    q[3] = (0.5 * tilt).cos();
    q[4] = (0.5 * tilt).sin();
    (model, State { q, v: DVector::zeros(6) })
}

/// Standing on its cap (16 corners on the ground), the cylinder keeps at most
/// `MAX_PAIR_CONTACTS` contacts each step and stays at rest for 2 s: its centre moves
/// less than 0.1 mm and it does not turn.
#[test]
fn a_cylinder_standing_on_its_cap_rests_on_the_kept_corners() {
    let (model, state) = cylinder_on_ground(0.1, 0.0);
    let mut sim = Simulator::new(model, SimOptions { dt: 1e-3, ..Default::default() }).unwrap();
    let u = Control::torques(DVector::zeros(6));
    let mut s = state.clone();
    let mut most = 0;
    for _ in 0..2000 {
        let (next, rec) = sim.step_recorded(&s, &u).unwrap();
        let n = rec.constraints().map_or(0, |c| c.contacts.len());
        most = most.max(n);
        s = next;
    }
    assert!((3..=MAX_PAIR_CONTACTS).contains(&most), "{most} contacts");
    let moved = ((s.q[0] - state.q[0]).powi(2) + (s.q[1] - state.q[1]).powi(2) + (s.q[2] - state.q[2]).powi(2)).sqrt();
    assert!(moved < 1e-4, "moved {moved:e} m");
    assert!(s.q[4].abs() < 1e-6 && s.q[5].abs() < 1e-6 && s.q[6].abs() < 1e-6, "turned: {:?}", s.q.rows(3, 4));
    assert!(s.v.amax() < 1e-6, "still moving: {}", s.v.amax());
}

/// Dropped from 2 cm with its axis tilted by 0.1 rad, the cylinder lands on the rim of
/// its cap, falls flat and settles: its energy never grows and it ends at rest on its cap.
#[test]
fn a_tilted_cylinder_falls_flat_and_settles() {
    let (model, state) = cylinder_on_ground(0.13, 0.1);
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: 1e-3, ..Default::default() }).unwrap();
    let u = Control::torques(DVector::zeros(6));
    let energy = |s: &State| {
        let mut data = stiction::dynamics::Data::new(&model);
        stiction::dynamics::kinetic_energy(&model, &mut data, s.q.as_slice(), s.v.as_slice()).unwrap()
            + stiction::dynamics::potential_energy(&model, &mut data, s.q.as_slice()).unwrap()
    };
    let mut s = state;
    let mut e = energy(&s);
    for k in 0..3000 {
        s = sim.step(&s, &u).unwrap();
        let e_next = energy(&s);
        assert!(e_next <= e + 1e-6, "step {k}: energy grew from {e} to {e_next}");
        e = e_next;
    }
    assert!(s.v.amax() < 1e-3, "not settled: {}", s.v.amax());
    // Flat on its cap: the axis vertical, the centre at half the length.
    let tilt = 2.0 * (s.q[4].powi(2) + s.q[5].powi(2)).sqrt().asin();
    assert!(tilt < 1e-3, "tilt {tilt}");
    assert!((s.q[2] - 0.1).abs() < 1e-3, "height {}", s.q[2]);
}
