//! Parameter Jacobians ∂(q⁺, v⁺)/∂θ of the recorded step against Ridders finite
//! differences through `ParamSpec::apply`, for every parameter kind (mass, COM,
//! inertia, damping, stiffness, rest position, armature, joint placement, gravity)
//! on every test model (1–79 DoF), at 20 random states each, to 1e-7 relative to the block's
//! largest entry; and a 200-step rollout VJP against finite differences of the loss.

mod common;
use common::{random_vector, ridders};
use nalgebra::{DMatrix, DVector};
use stiction::math::{SplitMix64, Vec3};
use stiction::model::{ParamKind, ParamSpec};
use stiction::step::ContactOptions;
use stiction::tape::Tape;
use stiction::{Control, Model, SimOptions, Simulator, State};

const DT: f64 = 5e-3;

/// A spec with every kind on a few bodies/joints (first, middle and last moving ones),
/// and a model where damping, stiffness and armature are positive (so that central
/// differences stay inside the valid range).
fn spec_and_model(model: &Model) -> (ParamSpec, Model, DVector<f64>) {
    let moving: Vec<usize> = (0..model.nbodies()).filter(|&i| model.joints()[i].nv() > 0).collect();
    let picks = [moving[0], moving[moving.len() / 2], *moving.last().unwrap()];
    let mut names = vec!["gravity".to_string()];
    for &b in picks.iter().collect::<std::collections::BTreeSet<_>>() {
        let (body, joint) = (&model.bodies()[b].name, &model.joints()[b]);
        for kind in ["mass", "com", "inertia", "placement", "damping", "stiffness", "armature"] {
            names.push(format!(
                "{kind}:{}",
                if ["mass", "com", "inertia"].contains(&kind) { body } else { &joint.name }
            ));
        }
        if !joint.kind.has_quaternion() {
            names.push(format!("rest:{}", joint.name));
        }
    }
    let spec = ParamSpec::parse(model, &names).unwrap();
    let mut theta = spec.values(model);
    for e in spec.entries() {
        for s in 0..e.len {
            let x = &mut theta[e.offset + s];
            match e.kind {
                ParamKind::Damping => *x = 0.3 + 0.1 * s as f64,
                ParamKind::Stiffness => *x = 2.0 + 0.5 * s as f64,
                ParamKind::Armature => *x = 0.01 + 0.002 * s as f64,
                ParamKind::Rest => *x += 0.1,
                _ => {}
            }
        }
    }
    let model = spec.apply(model, &theta).unwrap();
    (spec, model, theta)
}

/// A starting step size for each scalar of θ: small against the parameter and, for
/// inertia entries, against the body's smallest principal moment (stay positive definite).
fn fd_steps(spec: &ParamSpec, model: &Model, theta: &DVector<f64>) -> Vec<f64> {
    let mut h = vec![0.0; spec.len()];
    for e in spec.entries() {
        for s in 0..e.len {
            h[e.offset + s] = match e.kind {
                ParamKind::Inertia => {
                    // Stay inside the valid set: positive moments and the triangle
                    // inequality (thin rods sit close to its boundary).
                    let ic = model.bodies()[e.index].inertia.inertia_about_com();
                    let mut l: Vec<f64> = ic.symmetric_eigenvalues().iter().copied().collect();
                    l.sort_by(f64::total_cmp);
                    0.2 * l[0].min(l[0] + l[1] - l[2])
                }
                ParamKind::Com | ParamKind::Placement => 1e-2,
                _ => 0.02 * theta[e.offset + s].abs().max(0.1),
            };
        }
    }
    h
}

fn physical_state(model: &Model, rng: &mut SplitMix64, seed: u64) -> (State, Control) {
    let st = State { q: model.random_configuration(seed), v: random_vector(rng, model.nv(), 1.5) };
    let m = stiction::dynamics::crba(model, &mut stiction::Data::new(model), st.q.as_slice()).unwrap().clone();
    let tau = DVector::from_fn(model.nv(), |i, _| m[(i, i)] * rng.range(-3.0, 3.0));
    (st, Control::torques(tau))
}

#[test]
fn parameter_jacobians_match_ridders() {
    for base in common::test_models().into_iter().filter(|m| m.nv() > 0) {
        let (spec, model, theta) = spec_and_model(&base);
        let steps = fd_steps(&spec, &model, &theta);
        let mut rng = SplitMix64::new(51);
        let mut worst: f64 = 0.0;
        for k in 0..20 {
            let (st, c) = physical_state(&model, &mut rng, 5100 + k);
            let opts = SimOptions { dt: DT, ..Default::default() };
            let mut sim = Simulator::new(model.clone(), opts.clone()).unwrap();
            sim.set_params(spec.clone());
            let (nominal, record) = sim.step_recorded(&st, &c).unwrap();
            if record.fell_back() {
                continue;
            }
            let jac = record.jacobians().unwrap();
            let nv = model.nv();
            let cols: Vec<DVector<f64>> = (0..spec.len())
                .map(|j| {
                    let f = |e: f64| {
                        let mut th = theta.clone();
                        th[j] += e;
                        let m = spec.apply(&model, &th).unwrap();
                        let next = Simulator::new(m.clone(), opts.clone()).unwrap().step(&st, &c).unwrap();
                        let mut out = DVector::zeros(2 * nv);
                        out.rows_mut(0, nv).copy_from(&m.difference(&nominal.q, &next.q).unwrap());
                        out.rows_mut(nv, nv).copy_from(&(&next.v - &nominal.v));
                        out
                    };
                    ridders(&f, steps[j]).0
                })
                .collect();
            let fd = DMatrix::from_columns(&cols);
            let names = spec.names(&model);
            for (label, a, f) in [
                ("dq+/dθ", &jac.dq_dtheta, fd.rows(0, nv).into_owned()),
                ("dv+/dθ", &jac.dv_dtheta, fd.rows(nv, nv).into_owned()),
            ] {
                // Relative to the block's largest entry, as for the state blocks.
                let scale = f.amax().max(1e-12);
                for j in 0..spec.len() {
                    let err = (a.column(j) - f.column(j)).amax() / scale;
                    assert!(
                        err < 1e-7,
                        "{} state {k}: {label} column {} rel err {err:e}\nanalytic {}\nFD {}",
                        model.name(),
                        names[j],
                        a.column(j).transpose(),
                        f.column(j).transpose()
                    );
                    worst = worst.max(err);
                }
            }
        }
        eprintln!("{:<20} np {:3}: worst relative error {worst:.1e}", model.name(), spec.len());
    }
}

/// L = Σ_t (w_q |q_t − q*|² + w_v |v_t|² + w_τ |τ_t|²) + |q_T − q*|² + |v_T|² on a
/// fixed-base arm (scalar coordinates), over 200 steps; gradients with respect to q₀,
/// v₀, every τ_t and six parameter blocks against Ridders differences of the loss.
#[test]
fn rollout_vjp_matches_finite_differences_of_the_loss() {
    let base = stiction::model::samples::arm7();
    let spec = ParamSpec::parse(
        &base,
        &["mass:link3", "com:link5", "inertia:link6", "damping:joint2", "placement:joint4", "gravity"],
    )
    .unwrap();
    let (steps, dt) = (200, 1e-3);
    let mut rng = SplitMix64::new(61);
    let target = DVector::from_fn(7, |i, _| 0.3 - 0.1 * i as f64);
    let q0 = base.random_configuration(61) * 0.5;
    let v0 = random_vector(&mut rng, 7, 0.5);
    let taus: Vec<DVector<f64>> =
        (0..steps).map(|t| DVector::from_fn(7, |i, _| 2.0 * ((t as f64) * 0.05 + i as f64).sin())).collect();
    let (wq, wv, wt) = (0.3, 0.05, 1e-3);
    // The smooth dynamics: the constraint stage is off (with it, joint 7 reaches its 2.5 rad/s
    // velocity limit at step 46 and leaves it later — mode switches inside the rollout, where the
    // loss has kinks that finite differences straddle; tests/velocity_limits.rs covers those rows).
    let options =
        SimOptions { dt, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() };
    let loss = |model: &Model, q0: &DVector<f64>, v0: &DVector<f64>, taus: &[DVector<f64>]| -> f64 {
        let mut sim = Simulator::new(model.clone(), options.clone()).unwrap();
        let mut st = State { q: q0.clone(), v: v0.clone() };
        let mut l = 0.0;
        for tau in taus {
            l += wq * (&st.q - &target).norm_squared() + wv * st.v.norm_squared() + wt * tau.norm_squared();
            st = sim.step(&st, &Control::torques(tau.clone())).unwrap();
        }
        l + (&st.q - &target).norm_squared() + st.v.norm_squared()
    };
    // Analytic: record the rollout, then backpropagate.
    let mut sim = Simulator::new(base.clone(), options.clone()).unwrap();
    sim.set_params(spec.clone());
    let mut tape = Tape::new();
    let mut states = vec![State { q: q0.clone(), v: v0.clone() }];
    for tau in &taus {
        let (next, rec) = sim.step_recorded(states.last().unwrap(), &Control::torques(tau.clone())).unwrap();
        tape.push(rec).unwrap();
        states.push(next);
    }
    let grad_states: Vec<(DVector<f64>, DVector<f64>)> = states
        .iter()
        .enumerate()
        .map(|(t, s)| {
            let w = if t == steps { (1.0, 1.0) } else { (wq, wv) };
            ((&s.q - &target) * (2.0 * w.0), &s.v * (2.0 * w.1))
        })
        .collect();
    let grad_controls: Vec<DVector<f64>> = taus.iter().map(|t| t * (2.0 * wt)).collect();
    let g = tape.backward(&grad_states, &grad_controls).unwrap();
    let check = |name: String, analytic: f64, f: &dyn Fn(f64) -> f64, h: f64| {
        let (d, _) = ridders(&|e| DVector::from_element(1, f(e)), h);
        let err = (analytic - d[0]).abs() / d[0].abs().max(1e-3);
        assert!(err < 1e-6, "{name}: analytic {analytic} vs FD {} (rel err {err:e})", d[0]);
        err
    };
    let mut worst: f64 = 0.0;
    for k in 0..7 {
        worst = worst.max(check(
            format!("q0[{k}]"),
            g.q0[k],
            &|e| {
                let mut q = q0.clone();
                q[k] += e;
                loss(&base, &q, &v0, &taus)
            },
            1e-2,
        ));
        worst = worst.max(check(
            format!("v0[{k}]"),
            g.v0[k],
            &|e| {
                let mut v = v0.clone();
                v[k] += e;
                loss(&base, &q0, &v, &taus)
            },
            1e-2,
        ));
    }
    // Every control of every step.
    for t in 0..steps {
        for k in 0..7 {
            worst = worst.max(check(
                format!("tau[{t}][{k}]"),
                g.tau[t][k],
                &|e| {
                    let mut ts = taus.clone();
                    ts[t][k] += e;
                    loss(&base, &q0, &v0, &ts)
                },
                1e-1,
            ));
        }
    }
    let theta = spec.values(&base);
    let names = spec.names(&base);
    for j in 0..spec.len() {
        let h = if names[j].starts_with("inertia") { 2e-4 } else { 1e-2 };
        worst = worst.max(check(
            names[j].clone(),
            g.theta[j],
            &|e| {
                let mut th = theta.clone();
                th[j] += e;
                loss(&spec.apply(&base, &th).unwrap(), &q0, &v0, &taus)
            },
            h,
        ));
    }
    eprintln!("200-step rollout VJP: worst relative error {worst:.1e}");
    let _ = Vec3::zeros();
}

/// `ParamSpec::apply` shares the compiled collision shapes (hull cores) with the model
/// it starts from and sets only the materials θ names: the result equals a model built
/// from scratch with the same values, a material out of range is still an error naming
/// the shape, and a θ of masses and placements leaves the materials as they were.
#[test]
fn apply_reuses_the_compiled_shapes_and_sets_materials() {
    use stiction::collision::{ShapeCore, TriangleMesh};
    use stiction::math::{Inertia, SE3};
    use stiction::model::{Body, CollisionShape, Geometry, Material, WORLD};
    use stiction::{Joint, ModelBuilder};
    // A convex-mesh body (an octahedron) and a box on a hinge, over a ground plane.
    let v = |x: f64, y: f64, z: f64| Vec3::new(x, y, z);
    let octahedron = TriangleMesh {
        vertices: vec![
            v(0.1, 0.0, 0.0),
            v(-0.1, 0.0, 0.0),
            v(0.0, 0.1, 0.0),
            v(0.0, -0.1, 0.0),
            v(0.0, 0.0, 0.1),
            v(0.0, 0.0, -0.1),
        ],
        triangles: vec![[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]],
        source: None,
    };
    let mut b = ModelBuilder::new("apply_shapes");
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, SE3::identity())));
    b.add_body(
        WORLD,
        Joint::free("gem_free"),
        Body::new("gem", Inertia::solid_sphere(0.5, 0.1)).with_collision(
            CollisionShape::new(Geometry::ConvexMesh(octahedron), SE3::identity())
                .with_material(Material::new(0.4, 0.1)),
        ),
    );
    b.add_body(
        WORLD,
        Joint::revolute("hinge", Vec3::z()),
        Body::new("paddle", Inertia::solid_box(1.0, v(0.2, 0.1, 0.1)))
            .with_collision(CollisionShape::new(Geometry::Box { half_extents: v(0.1, 0.05, 0.05) }, SE3::identity())),
    );
    let model = b.build().unwrap();
    let spec =
        ParamSpec::parse(&model, &["friction:gem", "restitution:world", "mass:paddle", "placement:hinge"]).unwrap();
    let mut theta = spec.values(&model);
    theta[0] = 0.9;
    theta[1] = 0.3;
    theta[2] = 2.5;
    theta[3] = 0.25;
    let applied = spec.apply(&model, &theta).unwrap();
    // The hull cores are shared, not recompiled.
    let core = |m: &Model, i: usize| match &m.collision_model().shapes[i].core {
        ShapeCore::Convex(p) => std::sync::Arc::as_ptr(p),
        other => panic!("shape {i} is not convex: {other:?}"),
    };
    for i in 0..2 {
        assert_eq!(core(&model, i), core(&applied, i), "shape {i} was recompiled");
    }
    // The same model as one built from scratch with these values.
    let scratch = ModelBuilder::from(applied.clone()).build().unwrap();
    assert_eq!(applied.collision_model(), scratch.collision_model());
    assert_eq!(applied, scratch);
    let materials: Vec<Material> = applied.collision_model().shapes.iter().map(|s| s.material).collect();
    assert_eq!(materials[0], Material::new(0.9, 0.1), "the gem's friction is θ's");
    assert_eq!(materials[1], Material::default(), "the paddle's material is untouched");
    assert_eq!(materials[2].restitution, 0.3, "the ground's restitution is θ's");
    assert_eq!(spec.values(&applied), theta);
    // A material out of range is an error that names the shape.
    theta[1] = 1.5;
    let e = spec.apply(&model, &theta).unwrap_err().to_string();
    assert!(e.contains("restitution") && e.contains("'world'"), "{e}");
}
