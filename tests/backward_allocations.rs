//! Heap allocations of the backward sweep, counted with a counting global allocator
//! (per thread, so that tests running beside each other do not disturb the counts).
//!
//! `Tape::backward` allocates its outputs and buffers before the sweep; the sweep itself
//! allocates nothing per step, with or without constraint rows: the workspaces of the
//! constraint stages grow to the largest step seen and are reused (issue #18).

#[path = "../benches/common/contact_scenes.rs"]
#[allow(dead_code)]
mod contact_scenes;

use nalgebra::DVector;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use stiction::model::samples::arm7;
use stiction::model::ParamSpec;
use stiction::tape::{BackwardOptions, ContactGradientStrategy, StepGradients, Tape, Workspace};
use stiction::{Control, SimOptions, Simulator, State};

struct Counting;

thread_local! {
    /// Allocations made by this thread (a const-initialized cell: reading it never allocates).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(|c| c.get())
}

/// The allocations of `Tape::backward_with` on `tape` (unit gradient on the last state).
fn backward_allocations(tape: &Tape, options: &BackwardOptions) -> usize {
    let nv = tape.records()[0].model().nv();
    let mut grads = vec![(DVector::zeros(nv), DVector::zeros(nv)); tape.len() + 1];
    grads[tape.len()] = (DVector::from_element(nv, 1.0), DVector::from_element(nv, 1.0));
    let before = allocations();
    let (g, _) = tape.backward_with(&grads, &[], options).unwrap();
    let after = allocations();
    assert!(g.theta.iter().chain(&g.q0).chain(&g.v0).all(|x| x.is_finite()));
    after - before
}

fn arm_tape(steps: usize) -> Tape {
    let model = arm7();
    let mut options = SimOptions::default();
    options.contact.enabled = false;
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    sim.set_params(ParamSpec::parse(&model, &["mass:link3", "damping:joint2"]).unwrap());
    let mut state = State { q: model.random_configuration(3), v: DVector::from_element(model.nv(), 0.2) };
    let control = Control::torques(DVector::from_element(model.nv(), 0.1));
    let mut tape = Tape::new();
    for _ in 0..steps {
        let (next, rec) = sim.step_recorded(&state, &control).unwrap();
        tape.push(rec).unwrap();
        state = next;
    }
    tape
}

/// Of the allocations of `Tape::backward` on a contact-free rollout of the 7-DoF arm with
/// two parameters, only one per step grows with the rollout: the output `∂L/∂τ_t`, made
/// before the sweep.
#[test]
fn the_backward_sweep_without_constraints_allocates_only_its_outputs() {
    let (a, b) = (arm_tape(50), arm_tape(100));
    assert!(a.records().iter().chain(b.records()).all(|r| r.constraints().is_none()));
    let options = BackwardOptions::default();
    let (na, nb) = (backward_allocations(&a, &options), backward_allocations(&b, &options));
    println!("Tape::backward: {na} allocations over 50 steps, {nb} over 100");
    assert_eq!(nb - na, 50, "{na} allocations over 50 steps, {nb} over 100: the sweep allocates per step");
}

/// The same through contact: a box sliding on the ground, four boxes resting in two
/// stacks, and a 5-link arm pushing a box (every step with constraint rows, θ = masses
/// and a friction coefficient), under the exact and the loss-driven strategies. The
/// buffers of the constraint stages grow to the largest step of the tape during a first
/// sweep; a second sweep over the same records, with the same workspace and outputs
/// (as `Tape::backward` keeps them across its sweep), allocates nothing at all.
#[test]
fn the_backward_sweep_through_contact_allocates_nothing_per_step() {
    let scenes = contact_scenes::all().into_iter().map(|s| {
        let sim = contact_scenes::simulator(&s);
        (s, sim)
    });
    for (scene, mut sim) in scenes.chain([bouncing_ball()]) {
        let control = Control::torques(scene.tau.clone());
        let mut state = scene.state.clone();
        let mut tape = Tape::new();
        for _ in 0..120 {
            let (next, rec) = sim.step_recorded(&state, &control).unwrap();
            tape.push(rec).unwrap();
            state = next;
        }
        let records = tape.records();
        if scene.name == "bouncing_ball" {
            let impacts = records.iter().filter_map(|r| r.constraints()).filter(|c| c.info.iter().any(|i| i.bounce));
            assert!(impacts.count() >= 2, "the ball must bounce at least twice");
        } else {
            let all = records.iter().all(|r| r.constraints().is_some());
            assert!(all, "{}: every step must have contact", scene.name);
            let pos = records.iter().any(|r| r.constraints().unwrap().correction.is_some());
            assert!(pos || scene.name == "box_on_ground", "{}: some step must have a position stage", scene.name);
        }
        let nv = scene.model.nv();
        for strategy in [ContactGradientStrategy::Exact, ContactGradientStrategy::LossDriven] {
            let options = BackwardOptions { contact_strategy: strategy };
            let mut ws = Workspace::new(&scene.model);
            let mut out = StepGradients::zeros(nv, scene.params.len());
            let (mut gq, mut gv) = (DVector::from_element(nv, 1.0), DVector::from_element(nv, 1.0));
            let sweep = |ws: &mut Workspace, out: &mut StepGradients, gq: &mut DVector<f64>, gv: &mut DVector<f64>| {
                gq.fill(1.0);
                gv.fill(1.0);
                let before = allocations();
                for r in records.iter().rev() {
                    r.vjp_into(ws, gq, gv, &options, out).unwrap();
                    gq.copy_from(&out.q);
                    gv.copy_from(&out.v);
                }
                allocations() - before
            };
            let first = sweep(&mut ws, &mut out, &mut gq, &mut gv);
            let (q0, v0) = (gq.clone(), gv.clone());
            let second = sweep(&mut ws, &mut out, &mut gq, &mut gv);
            println!("{} ({strategy:?}): first sweep {first} allocations, second {second}", scene.name);
            assert_eq!(second, 0, "{} ({strategy:?}): the warm sweep allocates {second} times", scene.name);
            // The reused buffers give the same gradients as the first sweep.
            assert_eq!((&gq, &gv), (&q0, &v0), "{} ({strategy:?})", scene.name);
            assert!(q0.iter().chain(&v0).all(|x| x.is_finite()));
        }
        // Tape::backward runs the same sweep with one workspace: beyond the buffers'
        // growth, it allocates its outputs alone (one ∂L/∂τ_t per step).
        let options = BackwardOptions::default();
        let n = backward_allocations(&tape, &options);
        println!("{}: Tape::backward, {n} allocations over 120 steps", scene.name);
    }
}

/// A ball (restitution 0.6) thrown down and sideways onto the ground, bouncing with the
/// continuous-time (saltation) gradients; θ = its mass, restitution, friction and the
/// placement of its free joint (the placement columns of the row derivatives).
fn bouncing_ball() -> (contact_scenes::Scene, Simulator) {
    use stiction::math::{Inertia, SE3};
    use stiction::model::{Body, CollisionShape, Geometry, Material, WORLD};
    use stiction::step::BounceGradients;
    use stiction::{Joint, ModelBuilder};
    let mut b = ModelBuilder::new("bouncing_ball");
    b.add_link(
        Body::massless(WORLD).with_collision(
            CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(Material::new(0.4, 0.6)),
        ),
    );
    b.add_body(
        WORLD,
        Joint::free("ball_free"),
        Body::new("ball", Inertia::solid_sphere(0.7, 0.05)).with_collision(
            CollisionShape::new(Geometry::Sphere { radius: 0.05 }, SE3::identity())
                .with_material(Material::new(0.4, 0.6)),
        ),
    );
    let model = b.build().unwrap();
    let mut q = model.neutral();
    q[2] = 0.051;
    let mut v = DVector::zeros(6);
    v[3] = 0.2;
    v[5] = -0.5;
    let params = vec!["mass:ball", "restitution:ball", "friction:ball", "placement:ball_free"];
    let mut options = SimOptions { dt: contact_scenes::DT, ..Default::default() };
    options.contact.bounce_gradients = BounceGradients::ContinuousTime;
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    sim.set_params(ParamSpec::parse(&model, &params).unwrap());
    let tau = DVector::zeros(6);
    let scene = contact_scenes::Scene { name: "bouncing_ball", model, state: State { q, v }, tau, params };
    (scene, sim)
}
