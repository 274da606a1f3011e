//! Fixed-link merging (`ModelBuilder::merge_fixed_links`): a model whose welded links are
//! merged into their bodies has the dynamics, the kinematics of every link (as frames),
//! the parameters and the parameter derivatives of the same model built link by link.
//! The test tree welds links at turned placements, in a chain of two welds, with joints
//! hanging from merged links and a massless frame; the dofs of the two builds are
//! matched by joint name (the comparison does not rely on both traversals agreeing).

mod common;
use common::{random_vector, ridders};
use nalgebra::{DMatrix, DVector};
use stiction::dynamics::{
    aba, aba_derivatives, body_jacobian, crba, forward_kinematics, frame_jacobian, frame_pose, rnea, DerivativeData,
    ReferenceFrame,
};
use stiction::math::{Mat3, SplitMix64, Vec3, SE3};
use stiction::model::{CollisionShape, Geometry, ParamSpec};
use stiction::{Body, Control, Data, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

fn turned(axis: [f64; 3], angle: f64, t: [f64; 3]) -> SE3 {
    let mut x = SE3::from_axis_angle(&Vec3::new(axis[0], axis[1], axis[2]).normalize(), angle);
    x.trans = Vec3::new(t[0], t[1], t[2]);
    x
}

fn link(name: &str, mass: f64, com: [f64; 3], moments: [f64; 3]) -> Body {
    let i = Mat3::from_diagonal(&Vec3::new(moments[0], moments[1], moments[2]));
    Body::from_mass_properties(name, mass, Vec3::new(com[0], com[1], com[2]), i)
}

fn with_placement(mut j: Joint, x: SE3) -> Joint {
    j.placement = x;
    j
}

/// A floating base with a welded plate, an arm hanging from the plate, a sensor frame
/// and a tool welded in a chain below the arm, a second arm hanging from the tool, and
/// a leg on the base declared last (so that merging moves it ahead of the arms).
fn builder(merge: bool) -> ModelBuilder {
    let mut b = ModelBuilder::new("welded");
    b.floating_base(true).set_merge_fixed_links(merge).set_allow_massless_moving_links(false);
    let sphere = |r: f64, x: SE3| CollisionShape::new(Geometry::Sphere { radius: r }, x);
    b.add_link(link("base", 3.0, [0.01, -0.02, 0.03], [0.05, 0.06, 0.07]).with_collision(sphere(0.1, SE3::identity())));
    b.add_link(
        link("plate", 0.7, [0.05, 0.01, -0.02], [0.002, 0.003, 0.004])
            .with_collision(sphere(0.05, turned([0.0, 0.0, 1.0], 0.3, [0.1, 0.0, 0.0]))),
    );
    b.add_joint(
        "base",
        "plate",
        with_placement(Joint::fixed("plate_weld"), turned([1.0, 2.0, 0.5], 0.7, [0.2, -0.1, 0.05])),
    );
    b.add_link(link("arm1", 1.1, [0.0, 0.0, -0.15], [0.01, 0.012, 0.003]));
    b.add_joint(
        "plate",
        "arm1",
        with_placement(
            Joint::revolute("arm1_joint", Vec3::new(0.0, 1.0, 0.0)),
            turned([0.0, 1.0, 1.0], -0.4, [0.0, 0.1, -0.05]),
        ),
    );
    b.add_link(Body::massless("sensor"));
    b.add_joint(
        "arm1",
        "sensor",
        with_placement(Joint::fixed("sensor_mount"), turned([1.0, 0.0, 0.0], 1.1, [0.0, 0.0, -0.3])),
    );
    b.add_link(
        link("tool", 0.25, [0.02, 0.0, 0.01], [0.0004, 0.0005, 0.0003])
            .with_collision(sphere(0.03, turned([0.0, 1.0, 0.0], 0.2, [0.0, 0.01, 0.02]))),
    );
    b.add_joint(
        "sensor",
        "tool",
        with_placement(Joint::fixed("tool_mount"), turned([0.3, -1.0, 0.2], 0.9, [0.01, 0.04, 0.02])),
    );
    b.add_link(link("arm2", 0.6, [0.1, 0.0, 0.0], [0.001, 0.004, 0.004]));
    b.add_joint(
        "tool",
        "arm2",
        with_placement(
            Joint::revolute("arm2_joint", Vec3::new(0.0, 0.0, 1.0)).with_damping(0.2),
            turned([1.0, 1.0, 0.0], 0.5, [0.05, 0.0, 0.02]),
        ),
    );
    b.add_link(link("leg", 0.9, [0.0, 0.0, -0.2], [0.008, 0.008, 0.001]));
    b.add_joint(
        "base",
        "leg",
        with_placement(
            Joint::prismatic("leg_joint", Vec3::new(0.0, 0.0, 1.0)),
            turned([0.0, 0.0, 1.0], 0.2, [0.0, 0.0, -0.1]),
        ),
    );
    b
}

fn models() -> (Model, Model) {
    (builder(true).build().unwrap(), builder(false).build().unwrap())
}

/// For each dof of `merged`, the dof of `plain` of the same joint; likewise for the
/// configuration coordinates.
fn coordinate_maps(merged: &Model, plain: &Model) -> (Vec<usize>, Vec<usize>) {
    let (mut vmap, mut qmap) = (vec![usize::MAX; merged.nv()], vec![usize::MAX; merged.nq()]);
    for (i, j) in merged.joints().iter().enumerate() {
        let p = plain.joint_index(&j.name).unwrap();
        for k in 0..j.nv() {
            vmap[merged.v_index(i) + k] = plain.v_index(p) + k;
        }
        for k in 0..j.nq() {
            qmap[merged.q_index(i) + k] = plain.q_index(p) + k;
        }
    }
    assert!(vmap.iter().chain(&qmap).all(|&k| k != usize::MAX));
    (vmap, qmap)
}

fn to_plain(x: &DVector<f64>, map: &[usize]) -> DVector<f64> {
    let mut out = DVector::zeros(x.len());
    for (k, &p) in map.iter().enumerate() {
        out[p] = x[k];
    }
    out
}

/// `m` (rows and columns in the merged model's dofs) in the plain model's dofs.
fn mat_to_plain(m: &DMatrix<f64>, rows: &[usize], cols: &[usize]) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(m.nrows(), m.ncols());
    for (r, &pr) in rows.iter().enumerate() {
        for (c, &pc) in cols.iter().enumerate() {
            out[(pr, pc)] = m[(r, c)];
        }
    }
    out
}

fn rel(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    (a - b).amax() / b.amax().max(1e-12)
}

#[test]
fn welded_links_become_frames_of_their_bodies() {
    let (merged, plain) = models();
    assert_eq!(plain.nbodies(), 7);
    assert_eq!(merged.nbodies(), 4);
    assert_eq!((merged.nq(), merged.nv()), (plain.nq(), plain.nv()));
    let names: Vec<&str> = merged.bodies().iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["base", "arm1", "arm2", "leg"]);
    assert_eq!(merged.frames().len(), 7);
    for (frame, body) in [("plate", "base"), ("sensor", "arm1"), ("tool", "arm1"), ("arm2", "arm2"), ("base", "base")] {
        let (b, _) = merged.frame_placement(frame).unwrap();
        assert_eq!(merged.bodies()[b].name, body, "{frame}");
    }
    assert!(merged.has_merged_links() && !plain.has_merged_links());
    // The composite mass, and the merged links' own inertias kept on their frames.
    assert!((merged.total_mass() - plain.total_mass()).abs() < 1e-14);
    let tool = &merged.frames()[merged.frame_index("tool").unwrap()];
    assert_eq!(tool.inertia, plain.bodies()[plain.body_index("tool").unwrap()].inertia);
    // A merged link is not a body, and the error says where it went.
    let e = merged.body_index("plate").unwrap_err().to_string();
    assert!(e.contains("merged into body 'base'"), "{e}");
}

#[test]
fn dynamics_equal_the_link_by_link_model() {
    let (merged, plain) = models();
    let (vmap, qmap) = coordinate_maps(&merged, &plain);
    let (mut dm, mut dp) = (Data::new(&merged), Data::new(&plain));
    let (mut ddm, mut ddp) = (DerivativeData::new(&merged), DerivativeData::new(&plain));
    let mut rng = SplitMix64::new(7);
    for seed in 0..5 {
        let q = merged.random_configuration(seed);
        let (v, tau) = (random_vector(&mut rng, merged.nv(), 2.0), random_vector(&mut rng, merged.nv(), 3.0));
        let (qp, vp, taup) = (to_plain(&q, &qmap), to_plain(&v, &vmap), to_plain(&tau, &vmap));
        let m = crba(&merged, &mut dm, q.as_slice()).unwrap().clone();
        let mp = crba(&plain, &mut dp, qp.as_slice()).unwrap().clone();
        assert!(rel(&mat_to_plain(&m, &vmap, &vmap), &mp) < 1e-13, "mass matrix, seed {seed}");
        let a = to_plain(aba(&merged, &mut dm, q.as_slice(), v.as_slice(), tau.as_slice(), None).unwrap(), &vmap);
        let ap = aba(&plain, &mut dp, qp.as_slice(), vp.as_slice(), taup.as_slice(), None).unwrap().clone();
        assert!((&a - &ap).amax() < 1e-11 * ap.amax().max(1.0), "ABA, seed {seed}");
        let t = to_plain(rnea(&merged, &mut dm, q.as_slice(), v.as_slice(), tau.as_slice(), None).unwrap(), &vmap);
        let tp = rnea(&plain, &mut dp, qp.as_slice(), vp.as_slice(), taup.as_slice(), None).unwrap().clone();
        assert!((&t - &tp).amax() < 1e-11 * tp.amax().max(1.0), "RNEA, seed {seed}");
        let (dq, dv, minv) =
            aba_derivatives(&merged, &mut dm, &mut ddm, q.as_slice(), v.as_slice(), tau.as_slice(), None).unwrap();
        let (dqp, dvp, minvp) =
            aba_derivatives(&plain, &mut dp, &mut ddp, qp.as_slice(), vp.as_slice(), taup.as_slice(), None).unwrap();
        for (name, x, y) in [("dq", &dq, &dqp), ("dv", &dv, &dvp), ("minv", &minv, &minvp)] {
            assert!(rel(&mat_to_plain(x, &vmap, &vmap), y) < 1e-11, "ABA derivatives {name}, seed {seed}");
        }
    }
}

#[test]
fn every_link_is_a_frame_with_the_pose_and_jacobian_of_its_body_in_the_plain_model() {
    let (merged, plain) = models();
    let (vmap, qmap) = coordinate_maps(&merged, &plain);
    let (mut dm, mut dp) = (Data::new(&merged), Data::new(&plain));
    for seed in 0..3 {
        let q = merged.random_configuration(10 + seed);
        forward_kinematics(&merged, &mut dm, q.as_slice()).unwrap();
        forward_kinematics(&plain, &mut dp, to_plain(&q, &qmap).as_slice()).unwrap();
        for (f, frame) in merged.frames().iter().enumerate() {
            let b = plain.body_index(&frame.name).unwrap();
            let (x, xp) = (frame_pose(&merged, &dm, f).unwrap(), dp.x_world[b]);
            assert!((x.rot - xp.rot).amax() < 1e-13 && (x.trans - xp.trans).amax() < 1e-13, "{}", frame.name);
            for rf in [ReferenceFrame::Local, ReferenceFrame::World, ReferenceFrame::LocalWorldAligned] {
                let j = frame_jacobian(&merged, &dm, f, rf).unwrap();
                let jp = body_jacobian(&plain, &dp, b, rf).unwrap();
                let jm =
                    mat_to_plain(&DMatrix::from_column_slice(6, j.ncols(), j.as_slice()), &[0, 1, 2, 3, 4, 5], &vmap);
                let jp = DMatrix::from_column_slice(6, jp.ncols(), jp.as_slice());
                assert!(rel(&jm, &jp) < 1e-12, "{} {rf:?}", frame.name);
            }
        }
    }
}

#[test]
fn a_rollout_matches_the_plain_model() {
    let (merged, plain) = models();
    let (vmap, qmap) = coordinate_maps(&merged, &plain);
    let opts = SimOptions { dt: 2e-3, ..Default::default() };
    let (mut sm, mut sp) =
        (Simulator::new(merged.clone(), opts.clone()).unwrap(), Simulator::new(plain.clone(), opts).unwrap());
    let mut rng = SplitMix64::new(3);
    let mut s = State { q: merged.random_configuration(4), v: random_vector(&mut rng, merged.nv(), 1.0) };
    s.q[2] += 2.0; // well above the ground, if any
    let mut p = State { q: to_plain(&s.q, &qmap), v: to_plain(&s.v, &vmap) };
    let tau = random_vector(&mut rng, merged.nv(), 0.5);
    for _ in 0..200 {
        s = sm.step(&s, &Control::torques(tau.clone())).unwrap();
        p = sp.step(&p, &Control::torques(to_plain(&tau, &vmap))).unwrap();
    }
    assert!((to_plain(&s.q, &qmap) - &p.q).amax() < 1e-10);
    assert!((to_plain(&s.v, &vmap) - &p.v).amax() < 1e-9);
}

#[test]
fn parameters_of_merged_links_keep_their_names_values_and_derivatives() {
    let (merged, plain) = models();
    let (vmap, _) = coordinate_maps(&merged, &plain);
    let names = [
        "mass:plate",
        "com:plate",
        "inertia:tool",
        "mass:base",
        "com:arm1",
        "placement:arm1_joint",
        "placement:arm2_joint",
        "placement:leg_joint",
        "damping:arm2_joint",
        "gravity",
    ];
    let (spec, spec_p) = (ParamSpec::parse(&merged, &names).unwrap(), ParamSpec::parse(&plain, &names).unwrap());
    let theta = spec.values(&merged);
    assert_eq!(theta, spec_p.values(&plain));
    assert_eq!(spec.names(&merged), spec_p.names(&plain));
    // Round trips: the values give the model back, bit for bit, and so does JSON.
    assert_eq!(spec.apply(&merged, &theta).unwrap(), merged);
    assert_eq!(Model::from_json(&merged.to_json().unwrap()).unwrap(), merged);
    assert_eq!(ModelBuilder::from(merged.clone()).build().unwrap(), merged);
    // A changed value gives the model merged from the changed links.
    let mut th = theta.clone();
    th[0] += 0.3;
    th[12] -= 0.02; // placement:arm1_joint.y
    let changed = spec.apply(&merged, &th).unwrap();
    let rebuilt = spec_p.apply(&plain, &th).unwrap();
    let mut b = ModelBuilder::from(rebuilt);
    b.set_merge_fixed_links(true);
    let want = b.build().unwrap();
    assert!((changed.bodies()[0].inertia.mass - want.bodies()[0].inertia.mass).abs() < 1e-14);
    assert!((changed.joints()[2].placement.trans - want.joints()[2].placement.trans).amax() < 1e-15);

    // The step's parameter Jacobians: equal to the plain model's, and to Ridders
    // differences through `apply` on the merged model.
    let opts = SimOptions { dt: 5e-3, ..Default::default() };
    let mut rng = SplitMix64::new(11);
    let st = State { q: merged.random_configuration(2), v: random_vector(&mut rng, merged.nv(), 1.0) };
    let tau = random_vector(&mut rng, merged.nv(), 1.0);
    let c = Control::torques(tau.clone());
    let mut sim = Simulator::new(merged.clone(), opts.clone()).unwrap();
    sim.set_params(spec.clone());
    let (nominal, record) = sim.step_recorded(&st, &c).unwrap();
    let jac = record.jacobians().unwrap();
    let (_, qmap) = coordinate_maps(&merged, &plain);
    let stp = State { q: to_plain(&st.q, &qmap), v: to_plain(&st.v, &vmap) };
    let cp = Control::torques(to_plain(&tau, &vmap));
    let mut simp = Simulator::new(plain.clone(), opts.clone()).unwrap();
    simp.set_params(spec_p.clone());
    let (_, record_p) = simp.step_recorded(&stp, &cp).unwrap();
    let jac_p = record_p.jacobians().unwrap();
    let ident: Vec<usize> = (0..spec.len()).collect();
    assert!(rel(&mat_to_plain(&jac.dv_dtheta, &vmap, &ident), &jac_p.dv_dtheta) < 1e-10);
    assert!(rel(&mat_to_plain(&jac.dq_dtheta, &vmap, &ident), &jac_p.dq_dtheta) < 1e-10);
    let nv = merged.nv();
    for j in 0..spec.len() {
        let f = |e: f64| {
            let mut th = theta.clone();
            th[j] += e;
            let m = spec.apply(&merged, &th).unwrap();
            let next = Simulator::new(m.clone(), opts.clone()).unwrap().step(&st, &c).unwrap();
            let mut out = DVector::zeros(2 * nv);
            out.rows_mut(0, nv).copy_from(&m.difference(&nominal.q, &next.q).unwrap());
            out.rows_mut(nv, nv).copy_from(&(&next.v - &nominal.v));
            out
        };
        let kind = spec.entries().iter().find(|e| (e.offset..e.offset + e.len).contains(&j)).unwrap().kind;
        let h = if kind == stiction::model::ParamKind::Inertia { 1e-5 } else { 1e-3 };
        let fd = ridders(&f, h).0;
        let mut analytic = DVector::zeros(2 * nv);
        analytic.rows_mut(0, nv).copy_from(&jac.dq_dtheta.column(j));
        analytic.rows_mut(nv, nv).copy_from(&jac.dv_dtheta.column(j));
        let err = (&analytic - &fd).amax() / fd.amax().max(1e-9);
        assert!(err < 1e-7, "column {} ({}): relative error {err:e}", j, spec.names(&merged)[j]);
    }
}

#[test]
fn parameters_that_merging_removes_are_refused_by_name() {
    let (merged, _) = models();
    let e = ParamSpec::parse(&merged, &["placement:tool_mount"]).unwrap_err().to_string();
    assert!(e.contains("merged away"), "{e}");
    let e = ParamSpec::parse(&merged, &["friction:plate"]).unwrap_err().to_string();
    assert!(e.contains("merged into body 'base'") && e.contains("friction:base"), "{e}");
    // Every name `all_names` lists parses, and the spec round-trips.
    let spec = ParamSpec::all(&merged).unwrap();
    assert_eq!(spec.apply(&merged, &spec.values(&merged)).unwrap(), merged);
}

#[test]
fn merged_shapes_sit_where_their_links_put_them() {
    let (merged, plain) = models();
    let (_, qmap) = coordinate_maps(&merged, &plain);
    let (mut dm, mut dp) = (Data::new(&merged), Data::new(&plain));
    let q = merged.random_configuration(21);
    forward_kinematics(&merged, &mut dm, q.as_slice()).unwrap();
    forward_kinematics(&plain, &mut dp, to_plain(&q, &qmap).as_slice()).unwrap();
    let (cm, cp) = (merged.collision_model(), plain.collision_model());
    assert_eq!(cm.shapes.len(), cp.shapes.len());
    // Each plain shape has a merged twin at the same world pose and radius.
    for s in &cp.shapes {
        let x = s.world_pose(&dp.x_world);
        let twin = cm.shapes.iter().find(|t| {
            let y = t.world_pose(&dm.x_world);
            t.radius == s.radius && (x.trans - y.trans).amax() < 1e-13 && (x.rot - y.rot).amax() < 1e-13
        });
        assert!(twin.is_some(), "shape of radius {} on body {:?} has no twin", s.radius, s.body);
    }
}
